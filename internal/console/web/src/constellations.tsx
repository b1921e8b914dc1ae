// Constellations: the list, and one drawn live as a graph of device
// tasks, with the planner's edits as they happen.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
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
        {log.length === 0 ? <p class="dim">None that this server has seen.</p> : (
          <ol class="edits">
            {log.map((s) => (
              <li>
                <span class="dim">{time(s.time)}</span> {s.status && <PlannerStatus s={s.status} g={g} />}
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

// PlannerStatus is a planner step's status. A step that ends the
// constellation (FINISH, FAIL) while nodes still run is the planner's
// declaration: the constellation ends when they do, so the badge says so,
// and turns final only once the constellation's end has come.
function PlannerStatus({ s, g }: { s: string; g: Graph }) {
  const ends = s === "FINISH" || s === "FAIL";
  if (!ends || g.status !== "running") return <Status s={s} />;
  const running = g.nodes.filter((n) => n.status === "running").length;
  return (
    <span class="status s-declared" data-declared={s}>
      {s} declared · {running > 0 ? `${running} node${running === 1 ? "" : "s"} still running` : "ending"}
    </span>
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

// A view of the drawing: translate by (x, y), then scale by k.
interface View { x: number; y: number; k: number }

const MIN_K = 0.05, MAX_K = 3, PAD = 12;

// fitView shows the whole drawing in a viewport of w×h, never enlarged.
function fitView(width: number, height: number, w: number, h: number): View {
  const k = Math.max(MIN_K, Math.min(1, (w - 2 * PAD) / width, (h - 2 * PAD) / height));
  return { x: (w - width * k) / 2, y: Math.max(PAD, (h - height * k) / 2), k };
}

// zoomAt scales the view by f around the viewport's point (px, py).
function zoomAt(v: View, f: number, px: number, py: number): View {
  const k = Math.min(MAX_K, Math.max(MIN_K, v.k * f));
  return { k, x: px - ((px - v.x) * k) / v.k, y: py - ((py - v.y) * k) / v.k };
}

// matches finds the nodes a search names: the id itself first, then ids
// that contain it, then tasks that do (case aside), in graph order.
export function matches(g: Graph, q: string): string[] {
  const t = q.trim().toLowerCase();
  if (!t) return [];
  const out: string[] = [];
  const add = (ok: (n: CNode) => boolean) => {
    for (const n of g.nodes) if (ok(n) && !out.includes(n.id)) out.push(n.id);
  };
  add((n) => n.id.toLowerCase() === t);
  add((n) => n.id.toLowerCase().includes(t));
  add((n) => n.task.toLowerCase().includes(t));
  return out;
}

// GraphView draws the graph in a viewport that pans (drag, arrow keys,
// wheel with Shift) and zooms (wheel, + and −, the buttons), fits the
// whole graph (0, Fit), and finds a node by id or task text, centring and
// marking it. A graph that fits is shown whole, as it was.
function GraphView({ g }: { g: Graph }) {
  const { placed, width, height } = useMemo(() => layout(g), [g]);
  const frame = useRef<HTMLDivElement>(null);
  const [vw, setVw] = useState(800);
  // The viewport's height: the drawing's own when it fits, else most of
  // the screen.
  const vh = Math.max(H + GY, Math.min(height + 2 * PAD, Math.round(Math.max(320, innerHeight * 0.7))));
  const [view, setView] = useState<View | null>(null); // null: fit
  const v = view || fitView(width, height, vw, vh);
  const [q, setQ] = useState("");
  const [found, setFound] = useState<{ q: string; ids: string[]; at: number } | null>(null);
  const drag = useRef<{ x: number; y: number; v: View; moved: boolean } | null>(null);
  useEffect(() => {
    const el = frame.current;
    if (!el) return;
    const measure = () => setVw(el.clientWidth || 800);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    // The wheel zooms around the pointer (Shift+wheel pans): a listener
    // of its own, since it must not scroll the page.
    const wheel = (e: WheelEvent) => {
      e.preventDefault();
      const r = el.getBoundingClientRect();
      setView((cur) => {
        const base = cur || fitView(width, height, el.clientWidth, el.clientHeight);
        if (e.shiftKey) return { ...base, x: base.x - e.deltaY, y: base.y - e.deltaX };
        return zoomAt(base, Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
      });
    };
    el.addEventListener("wheel", wheel, { passive: false });
    return () => {
      ro.disconnect();
      el.removeEventListener("wheel", wheel);
    };
  }, [width, height]);
  const zoom = (f: number) => setView(zoomAt(v, f, vw / 2, vh / 2));
  const pan = (dx: number, dy: number) => setView({ ...v, x: v.x + dx, y: v.y + dy });
  // centre puts a node in the middle of the viewport, readable.
  const centre = (id: string) => {
    const p = placed.get(id);
    if (!p) return;
    const k = Math.max(v.k, 1);
    setView({ k, x: vw / 2 - (p.x + W / 2) * k, y: vh / 2 - (p.y + H / 2) * k });
  };
  const find = (e: Event) => {
    e.preventDefault();
    // The same search again goes to its next match.
    const ids = found && found.q === q ? found.ids : matches(g, q);
    const at = found && found.q === q && ids.length > 0 ? (found.at + 1) % ids.length : 0;
    setFound({ q, ids, at });
    if (ids.length > 0) centre(ids[at]);
  };
  const current = found && found.ids.length > 0 ? found.ids[found.at] : "";
  const onKey = (e: KeyboardEvent) => {
    if (e.target !== e.currentTarget) return; // a node's link has its own keys
    const step = 60;
    const act: Record<string, () => void> = {
      ArrowLeft: () => pan(step, 0), ArrowRight: () => pan(-step, 0), ArrowUp: () => pan(0, step), ArrowDown: () => pan(0, -step),
      "+": () => zoom(1.25), "=": () => zoom(1.25), "-": () => zoom(0.8), "0": () => setView(null),
    };
    if (act[e.key] && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      act[e.key]();
    }
  };
  // A node reached with Tab is brought into view.
  const onFocus = (e: FocusEvent) => {
    const id = (e.target as Element).closest?.("[data-node]")?.getAttribute("data-node");
    const p = id && placed.get(id);
    if (!p) return;
    const x = v.x + p.x * v.k, y = v.y + p.y * v.k;
    if (x < 0 || y < 0 || x + W * v.k > vw || y + H * v.k > vh) centre(id!);
  };
  const down = (e: PointerEvent) => {
    if (e.button !== 0) return;
    drag.current = { x: e.clientX, y: e.clientY, v, moved: false };
  };
  const move = (e: PointerEvent) => {
    const d = drag.current;
    if (!d) return;
    const dx = e.clientX - d.x, dy = e.clientY - d.y;
    if (!d.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    if (!d.moved) (e.currentTarget as Element).setPointerCapture?.(e.pointerId);
    d.moved = true;
    setView({ ...d.v, x: d.v.x + dx, y: d.v.y + dy });
  };
  const up = (e: PointerEvent) => {
    const d = drag.current;
    drag.current = null;
    if (d?.moved) {
      // A drag is not a click on the node it ended on.
      const el = e.currentTarget as Element;
      const stop = (c: Event) => c.preventDefault();
      el.addEventListener("click", stop, { capture: true, once: true });
      setTimeout(() => el.removeEventListener("click", stop, { capture: true }), 0);
    }
  };
  const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const done = g.nodes.filter((n) => n.status === "completed").length;
  const drawing = useMemo(() => (
    <>
      {g.edges.map((e) => {
        const a = placed.get(e.from), b = placed.get(e.to);
        if (!a || !b) return null;
        const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
        const my = (y1 + y2) / 2;
        return <path class="edge" data-edge={`${e.from}-${e.to}`} d={`M ${x1} ${y1} C ${x1} ${my}, ${x2} ${my}, ${x2} ${y2 - 2}`} marker-end="url(#arrow)" />;
      })}
      {[...placed.values()].map(({ n, x, y }) => {
        const box = (
          <g class={`node n-${n.status}${n.id === current ? " found" : ""}`} data-node={n.id} data-status={n.status} data-device={n.device}
            data-found={n.id === current ? "true" : undefined} transform={`translate(${x} ${y})`}>
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
    </>
  ), [g, placed, current]);
  const status = !found ? "" : found.ids.length === 0 ? `No node matches “${found.q}”.` :
    `${current}: ${found.at + 1} of ${found.ids.length} match${found.ids.length === 1 ? "" : "es"}${found.ids.length > 1 ? " (Find again for the next)" : ""}.`;
  return (
    <figure class="graph">
      <div class="graph-tools">
        <form class="graph-find" role="search" onSubmit={find}>
          <label for="graph-q">Find a node</label>
          <input id="graph-q" type="search" value={q} placeholder="id or words of its task" onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
          <button type="submit">Find</button>
        </form>
        <div class="graph-zoom" role="group" aria-label="Zoom">
          <button type="button" aria-label="Zoom out" onClick={() => zoom(0.8)}>−</button>
          <button type="button" aria-label="Zoom in" onClick={() => zoom(1.25)}>+</button>
          <button type="button" onClick={() => setView(null)}>Fit</button>
          <span class="dim zoom-level">{Math.round(v.k * 100)}%</span>
        </div>
      </div>
      <p class="dim graph-found" role="status">{status}</p>
      <div class="graph-frame" ref={frame} tabIndex={0} role="group" data-zoom={v.k.toFixed(3)}
        aria-label={`The graph: ${g.nodes.length} nodes, ${g.edges.length} dependencies, ${done} completed. Arrow keys pan, + and − zoom, 0 fits it in view.`}
        onKeyDown={onKey} onFocusCapture={onFocus} onPointerDown={down} onPointerMove={move} onPointerUp={up} onPointerCancel={() => (drag.current = null)}>
        <svg width="100%" height={vh}>
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M 0 0 L 10 5 L 0 10 z" class="arrow" />
            </marker>
          </defs>
          <g class="pan" transform={`translate(${v.x} ${v.y}) scale(${v.k})`}>{drawing}</g>
        </svg>
      </div>
    </figure>
  );
}
