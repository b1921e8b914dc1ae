// Constellations: the list, and one drawn live as a graph of device
// tasks, with the planner's edits as they happen.
import { useEffect, useRef, useState } from "preact/hooks";
import { call, stream } from "./api";
import { go, message, Status, time } from "./common";
import type { CEvent, CNode, CPage, CSummary, Edit, Graph } from "./types";

export function Constellations() {
  const [list, setList] = useState<CSummary[] | null>(null);
  const [next, setNext] = useState("");
  const [more, setMore] = useState(false);
  const [error, setError] = useState("");
  const [request, setRequest] = useState("");
  useEffect(() => {
    call<CPage>("GET", "/api/constellations").then((r) => {
      setList(r.constellations || []);
      setNext(r.next_url || "");
    }, (e) => setError(message(e)));
  }, []);
  // The next page: the list pages by cursor, so what is loaded stays put
  // while constellations start.
  const loadMore = async () => {
    setMore(true);
    try {
      const r = await call<CPage>("GET", next);
      setList((l) => [...(l || []), ...(r.constellations || [])]);
      setNext(r.next_url || "");
    } catch (e) {
      setError(message(e));
    } finally {
      setMore(false);
    }
  };
  const start = async (e: Event) => {
    e.preventDefault();
    setError("");
    try {
      const g = await call<Graph>("POST", "/api/constellations", { request });
      go(`constellations/${encodeURIComponent(g.id)}`);
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <section aria-labelledby="cons-h">
      <h1 id="cons-h">Constellations</h1>
      <form class="dispatch" onSubmit={start}>
        <label for="c-request">A request over several devices</label>
        <textarea id="c-request" rows={2} required value={request} onInput={(e) => setRequest((e.target as HTMLTextAreaElement).value)} />
        <button type="submit">Start</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {!list ? <p>Loading the constellations…</p> : list.length === 0 ? <p>No constellation yet.</p> : (
        <>
          <table class="cons">
            <thead><tr><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Nodes</th><th scope="col">Started</th></tr></thead>
            <tbody>
              {list.map((c) => (
                <tr data-constellation={c.id}>
                  <td><a href={`#/constellations/${encodeURIComponent(c.id)}`}>{c.request}</a></td>
                  <td><Status s={c.status} /></td>
                  <td>{counts(c)}</td>
                  <td>{new Date(c.created_at).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {next && <p><button class="more" onClick={loadMore} disabled={more}>{more ? "Loading…" : "Older constellations"}</button></p>}
        </>
      )}
    </section>
  );
}

// counts says how a constellation's nodes stand: "12 (9 done, 2 running, 1 failed)".
function counts(c: CSummary): string {
  const n = c.nodes;
  const parts = [`${n.completed} done`];
  if (n.running) parts.push(`${n.running} running`);
  if (n.failed) parts.push(`${n.failed} failed`);
  if (n.cancelled) parts.push(`${n.cancelled} cancelled`);
  return `${n.total} (${parts.join(", ")})`;
}

// A planner step's edits, as they came.
interface EditLog {
  time: string;
  status?: string;
  edits: Edit[];
  answer?: string;
}

export function ConstellationView({ id }: { id: string }) {
  const [g, setG] = useState<Graph | null>(null);
  const [live, setLive] = useState(false);
  const [log, setLog] = useState<EditLog[]>([]);
  const [error, setError] = useState("");
  useEffect(() => {
    setG(null);
    setLog([]);
    let close = () => {};
    let ended = false;
    const on = (kind: string, e: CEvent) => {
      if (e.graph) setG(e.graph);
      else if (e.node) setG((cur) => (cur ? withNode(cur, e) : cur));
      if (kind === "planner") setLog((l) => [...l, { time: e.time, status: e.status, edits: e.edits || [], answer: e.answer }]);
      if (kind === "end") {
        // The stream ends with the constellation: do not reconnect.
        ended = true;
        close();
        setLive(false);
      }
    };
    close = stream(`/api/constellations/${encodeURIComponent(id)}/events`, on, (l) => setLive(l && !ended),
      ["graph", "node_start", "node_task", "node_end", "planner", "end"]);
    if (ended) close();
    return () => close();
  }, [id]);
  const cancel = async () => {
    setError("");
    try {
      setG(await call<Graph>("DELETE", `/api/constellations/${encodeURIComponent(id)}`));
    } catch (e) {
      setError(message(e));
    }
  };
  if (!g) return <p>Loading the constellation…</p>;
  return (
    <article class="constellation" data-status={g.status} data-version={g.version}>
      <p><a href="#/constellations">All constellations</a></p>
      <h1>{g.request}</h1>
      <p class="meta"><Status s={g.status} /> · version {g.version} · started {time(g.created_at)} · <span role="status">{g.status === "running" ? (live ? "live" : "reconnecting…") : "ended"}</span></p>
      {g.answer && <p class="result">Answer: {g.answer}</p>}
      {g.error && <p class="error failure">Failed: {g.error}</p>}
      {g.status === "running" && <button class="decline" onClick={cancel}>Cancel constellation</button>}
      {error && <p class="error" role="alert">{error}</p>}
      <GraphView g={g} />
      <section aria-labelledby="nodes-h">
        <h2 id="nodes-h">Nodes</h2>
        <table class="nodes">
          <thead><tr><th scope="col">Node</th><th scope="col">Device</th><th scope="col">State</th><th scope="col">After</th><th scope="col">Task</th></tr></thead>
          <tbody>
            {g.nodes.map((n) => (
              <tr data-node={n.id} data-status={n.status}>
                <td>{n.id}</td>
                <td>{n.device}</td>
                <td><Status s={n.status} />{n.attempts && n.attempts > 1 ? ` (attempt ${n.attempts})` : ""}</td>
                <td>{g.edges.filter((e) => e.to === n.id).map((e) => e.from).join(", ") || "—"}</td>
                <td>{n.task_id ? <a href={`#/tasks/${n.task_id}`}>{n.task}</a> : n.task}{n.error && <span class="error"> · {n.error}</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="edits-h">
        <h2 id="edits-h">The planner's edits</h2>
        {log.length === 0 ? <p class="dim">None since this page opened.</p> : (
          <ol class="edits">
            {log.map((s) => (
              <li>
                <span class="dim">{time(s.time)}</span> {s.status && <Status s={s.status} />}
                {s.edits.length > 0 && <ul>{s.edits.map((e) => <li class={e.ok ? "ok" : "error"}><code>{e.op}</code> {editArgs(e)}{e.ok ? "" : ` refused: ${e.reason}`}</li>)}</ul>}
                {s.answer && <p>{s.answer}</p>}
              </li>
            ))}
          </ol>
        )}
      </section>
    </article>
  );
}

// withNode applies a node event to the graph until the next graph comes.
function withNode(g: Graph, e: CEvent): Graph {
  return {
    ...g,
    nodes: g.nodes.map((n) => {
      if (n.id !== e.node) return n;
      const m = { ...n };
      if (e.status) m.status = e.status;
      if (e.device) m.device = e.device;
      if (e.task_id) m.task_id = e.task_id;
      if (e.outcome?.error) m.error = e.outcome.error;
      return m;
    }),
  };
}

function editArgs(e: Edit): string {
  const a = e.args || {};
  const parts = ["id", "from", "to", "device"].filter((k) => a[k] !== undefined).map((k) => `${k} ${a[k]}`);
  return parts.join(", ");
}

// ---- the graph: our own layered layout, drawn in SVG. Each node sits one
// layer below the deepest node it depends on; within a layer, nodes are
// ordered by the mean position of what they depend on (one pass, which
// keeps crossings few for the small graphs a planner makes).

const W = 168, H = 58, GX = 24, GY = 46;

interface Placed { n: CNode; x: number; y: number }

export function layout(g: Graph): { placed: Map<string, Placed>; width: number; height: number } {
  const deps = new Map<string, string[]>();
  for (const n of g.nodes) deps.set(n.id, []);
  for (const e of g.edges) deps.get(e.to)?.push(e.from);
  const layer = new Map<string, number>();
  const depth = (id: string, seen: Set<string>): number => {
    const known = layer.get(id);
    if (known !== undefined) return known;
    if (seen.has(id)) return 0; // a cycle, which validation refuses: draw it anyway
    seen.add(id);
    let d = 0;
    for (const p of deps.get(id) || []) if (deps.has(p)) d = Math.max(d, depth(p, seen) + 1);
    layer.set(id, d);
    return d;
  };
  const rows: CNode[][] = [];
  for (const n of g.nodes) {
    const d = depth(n.id, new Set());
    (rows[d] ||= []).push(n);
  }
  const placed = new Map<string, Placed>();
  let width = 0;
  rows.forEach((row, r) => {
    if (r > 0) {
      const mean = (n: CNode) => {
        const xs = (deps.get(n.id) || []).map((p) => placed.get(p)?.x).filter((x): x is number => x !== undefined);
        return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity;
      };
      row.sort((a, b) => mean(a) - mean(b));
    }
    row.forEach((n, i) => placed.set(n.id, { n, x: GX + i * (W + GX), y: GY / 2 + r * (H + GY) }));
    width = Math.max(width, GX + row.length * (W + GX));
  });
  // Narrower rows are centred under the widest.
  rows.forEach((row) => {
    const shift = (width - (GX + row.length * (W + GX))) / 2;
    for (const n of row) placed.get(n.id)!.x += shift;
  });
  return { placed, width: Math.max(width, W + 2 * GX), height: rows.length * (H + GY) };
}

function GraphView({ g }: { g: Graph }) {
  const { placed, width, height } = layout(g);
  const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const done = g.nodes.filter((n) => n.status === "completed").length;
  return (
    <figure class="graph">
      <svg viewBox={`0 0 ${width} ${Math.max(height, H + GY)}`} width={width} role="group"
        aria-label={`The graph: ${g.nodes.length} nodes, ${g.edges.length} dependencies, ${done} completed`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrow" />
          </marker>
        </defs>
        {g.edges.map((e) => {
          const a = placed.get(e.from), b = placed.get(e.to);
          if (!a || !b) return null;
          const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
          const my = (y1 + y2) / 2;
          return <path class="edge" data-edge={`${e.from}-${e.to}`} d={`M ${x1} ${y1} C ${x1} ${my}, ${x2} ${my}, ${x2} ${y2 - 2}`} marker-end="url(#arrow)" />;
        })}
        {[...placed.values()].map(({ n, x, y }) => {
          const box = (
            <g class={`node n-${n.status}`} data-node={n.id} data-status={n.status} data-device={n.device} transform={`translate(${x} ${y})`}>
              <title>{`${n.id} on ${n.device}: ${n.status}. ${n.task}`}</title>
              <rect width={W} height={H} rx="8" />
              <text x="10" y="20" class="nid">{cut(n.id, 18)}</text>
              <text x="10" y="37">{cut(n.device, 22)}</text>
              <text x="10" y="52" class="nstate">{n.status}{n.attempts && n.attempts > 1 ? ` · try ${n.attempts}` : ""}</text>
            </g>
          );
          // A node whose task has started leads to the task's page; its
          // name is what it shows (id, device, state).
          return n.task_id ? <a href={`#/tasks/${n.task_id}`}>{box}</a> : box;
        })}
      </svg>
    </figure>
  );
}
