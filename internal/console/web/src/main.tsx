// Saucer's console: one page over the server's API and event streams.
import { render } from "preact";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { APIError, call, login, logout, session, stream } from "./api";
import { go, matches, Pager, secs, Status, time, typing, when, you } from "./common";
import { Constellations, ConstellationView } from "./constellations";
import { Devices, DeviceView } from "./devices";
import type { Client, CommandState, Decision, EvalSummary, Pending, Progress, ReplayInfo, RunInfo, RunSummary, Step, TaskInfo, TaskSummary, Usage } from "./types";

// ---- routing: #/tasks, #/tasks/ID, #/devices, #/devices/ID, #/runs,
// #/runs/ID, #/evals, #/constellations, #/constellations/ID

function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, "") || "tasks").split("/").map(decodeURIComponent);
  const [route, setRoute] = useState(read());
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

// ---- formatting


// usageLine says what a task's or a run's model calls used and cost.
// Tokens Saucer counted because the provider reported none are marked
// "~", and the cost is the server's words ("$0.0123", "~$0.0123
// (estimated)", "cost unknown"): a cost the server did not give is
// unknown, never $0.
function usageLine(u?: Usage, cost?: string, calls?: number): string {
  if (!u || !(u.prompt_tokens + u.completion_tokens)) return "no tokens used yet";
  const est = u.estimated ? "~" : "";
  const cached = u.prompt_tokens ? Math.round((100 * (u.cached_tokens || 0)) / u.prompt_tokens) : 0;
  const parts = [];
  if (calls) parts.push(`${calls} model calls`);
  parts.push(`${est}${u.prompt_tokens + u.completion_tokens} tokens (${est}${u.prompt_tokens} prompt, ${est}${u.completion_tokens} completion${u.estimated ? ", estimated: the provider reported none" : ""})`);
  parts.push(`${cached}% of the prompt cached`);
  parts.push(costText(u, cost));
  return parts.join(" · ");
}

// costText is a cost as the list and the pages show it.
function costText(u?: Usage, cost?: string): string {
  if (cost) return cost;
  return u && u.prompt_tokens + u.completion_tokens ? "cost unknown" : "";
}

// ---- shared state: the server's stream

interface World {
  tasks: Map<string, TaskSummary>;
  clients: Map<string, Client>;
  live: boolean;
  loaded: boolean; // the server's snapshot has come
}

function useWorld(onExpired: () => void): World {
  const [world, setWorld] = useState<World>({ tasks: new Map(), clients: new Map(), live: false, loaded: false });
  useEffect(
    () =>
      stream(
        "/api/events",
        (type, data) =>
          setWorld((w) => {
            const tasks = new Map(w.tasks);
            const clients = new Map(w.clients);
            switch (type) {
              case "snapshot":
                tasks.clear();
                clients.clear();
                for (const t of data.tasks as TaskSummary[]) tasks.set(t.id, t);
                for (const c of data.clients as Client[]) clients.set(c.client_id, c);
                break;
              case "task":
              case "end":
                tasks.set(data.id, data);
                break;
              case "client":
                clients.set(data.client_id, data);
                break;
              case "client_gone":
                clients.delete(data.client_id);
                break;
            }
            return { tasks, clients, live: true, loaded: w.loaded || type === "snapshot" };
          }),
        (live) => {
          setWorld((w) => ({ ...w, live }));
          if (!live) session().then((ok) => ok || onExpired(), () => undefined);
        },
      ),
    [],
  );
  return world;
}

// ---- the app

function App() {
  const [state, setState] = useState<"loading" | "login" | "in">("loading");
  useEffect(() => {
    // saucer run --console prints a link that carries its key: log in
    // with it, and take it out of the address.
    const m = location.hash.match(/^#key=([^&]+)/);
    if (m) {
      history.replaceState(null, "", location.pathname + "#/tasks");
      login(decodeURIComponent(m[1])).then(() => setState("in"), () => setState("login"));
      return;
    }
    session().then((ok) => setState(ok ? "in" : "login"), () => setState("login"));
  }, []);
  if (state === "loading") return <main class="boot"><p>Loading the console…</p></main>;
  if (state === "login") return <Login done={() => setState("in")} />;
  return <Console expired={() => setState("login")} />;
}

function Login({ done }: { done: () => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await login(key);
      done();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <h1>Saucer console</h1>
      <form onSubmit={submit}>
        <label for="key">Server key</label>
        <input id="key" name="key" type="password" autocomplete="current-password" required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        <p class="hint">The server's API key: its <code>--token</code>, or <code>SAUCER_TOKEN</code>.</p>
        <button type="submit" disabled={busy}>Log in</button>
        {error && <p class="error" role="alert">{error}</p>}
      </form>
    </main>
  );
}

function Console({ expired }: { expired: () => void }) {
  const route = useRoute();
  const world = useWorld(expired);
  const [help, setHelp] = useState(false);
  const tasks = useMemo(() => [...world.tasks.values()].sort((a, b) => b.created_at.localeCompare(a.created_at)), [world.tasks]);
  const waiting = tasks.flatMap((t) => t.open.map((p) => ({ task: t, p })));
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (typing(e)) return;
      const views: Record<string, string> = { "1": "tasks", "2": "devices", "3": "runs", "4": "evals", "5": "constellations" };
      if (views[e.key]) go(views[e.key]);
      else if (e.key === "?") setHelp((h) => !h);
      else if (e.key === "Escape") setHelp(false);
    };
    addEventListener("keydown", on);
    return () => removeEventListener("keydown", on);
  }, []);
  const page = route[0];
  return (
    <>
      <header>
        <a class="brand" href="#/tasks">Saucer</a>
        <nav aria-label="Views">
          {["tasks", "devices", "runs", "evals", "constellations"].map((v) => (
            <a href={`#/${v}`} aria-current={page === v ? "page" : undefined}>{v[0].toUpperCase() + v.slice(1)}</a>
          ))}
        </nav>
        <a class={waiting.length ? "badge on" : "badge"} href={waiting.length ? `#/tasks/${waiting[0].task.id}` : "#/tasks"} id="waiting">
          {waiting.length} waiting for you
        </a>
        <span class={world.live ? "conn live" : "conn"} role="status">{world.live ? "live" : "reconnecting…"}</span>
        <button class="link" onClick={() => logout().then(expired, expired)}>Log out</button>
      </header>
      <main>
        {help && <Help close={() => setHelp(false)} />}
        {page === "tasks" && !route[1] && <Tasks tasks={tasks} clients={world.clients} waiting={waiting} loaded={world.loaded} />}
        {page === "tasks" && route[1] && <TaskView id={route[1]} summary={world.tasks.get(route[1])} />}
        {page === "devices" && !route[1] && <Devices clients={world.clients} tasks={tasks} />}
        {page === "devices" && route[1] && <DeviceView id={route[1]} client={world.clients.get(route[1])} tasks={tasks} />}
        {page === "constellations" && !route[1] && <Constellations />}
        {page === "constellations" && route[1] && <ConstellationView id={route[1]} />}
        {page === "runs" && !route[1] && <Runs />}
        {page === "runs" && route[1] && <RunView id={route[1]} />}
        {page === "evals" && <Evals />}
      </main>
    </>
  );
}

function Help({ close }: { close: () => void }) {
  return (
    <section class="help" aria-label="Keyboard shortcuts">
      <h2>Keyboard shortcuts</h2>
      <dl>
        <dt>1 2 3 4 5</dt><dd>Tasks, devices, runs, evals, constellations</dd>
        <dt>a / d</dt><dd>Approve / decline the first waiting approval (on a task, or the list of what waits)</dd>
        <dt>r</dt><dd>Answer the first waiting question (type, then Enter)</dd>
        <dt>x</dt><dd>Cancel the task shown</dd>
        <dt>j / k</dt><dd>Next / previous step of a recorded run</dd>
        <dt>?</dt><dd>Show or hide this help</dd>
      </dl>
      <button onClick={close}>Close</button>
    </section>
  );
}

// ---- what waits for a person

function PendingItem({ taskId, p, autofocus }: { taskId: string; p: Pending; autofocus?: boolean }) {
  const [answer, setAnswer] = useState("");
  const [error, setError] = useState("");
  const settle = async (body: unknown) => {
    setError("");
    try {
      await call("POST", `/api/tasks/${encodeURIComponent(taskId)}/pending/${encodeURIComponent(p.id)}`, body);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  const inputId = `answer-${taskId}-${p.id}`;
  return (
    <li class={`pending ${p.kind}`} data-pending={p.id}>
      <p class="who">{p.agent} {p.kind === "question" ? "asks" : "asks to approve"}</p>
      {p.kind === "question" ? (
        <form onSubmit={(e) => { e.preventDefault(); settle({ answer }); }}>
          <label for={inputId}>{p.question}</label>
          <div class="row">
            <input id={inputId} class="answer" value={answer} autofocus={autofocus} onInput={(e) => setAnswer((e.target as HTMLInputElement).value)} />
            <button type="submit">Answer</button>
          </div>
        </form>
      ) : (
        <>
          <p class="reason">{p.reason}</p>
          <ul class="cmds">{(p.commands || []).map((c) => <li><code>{(c.namespace ? c.namespace + "." : "") + c.tool_name}{JSON.stringify(c.parameters || {})}</code></li>)}</ul>
          <div class="row">
            <button class="approve" onClick={() => settle({ approve: true })}>Approve</button>
            <button class="decline" onClick={() => settle({ approve: false })}>Decline</button>
          </div>
        </>
      )}
      <p class="expires">waits until {time(p.expires_at)}</p>
      {error && <p class="error" role="alert">{error}</p>}
    </li>
  );
}

// useSettleKeys: a approves, d declines the first approval; r focuses the
// first question's answer.
function useSettleKeys(items: { taskId: string; p: Pending }[]) {
  const ref = useRef(items);
  ref.current = items;
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (typing(e)) return;
      const first = ref.current.find((i) => i.p.kind === "approval");
      if ((e.key === "a" || e.key === "d") && first) {
        e.preventDefault();
        call("POST", `/api/tasks/${encodeURIComponent(first.taskId)}/pending/${encodeURIComponent(first.p.id)}`, { approve: e.key === "a" }).catch(() => undefined);
      }
      if (e.key === "r") {
        const q = document.querySelector<HTMLInputElement>("li.pending.question input.answer");
        if (q) {
          e.preventDefault();
          q.focus();
        }
      }
    };
    addEventListener("keydown", on);
    return () => removeEventListener("keydown", on);
  }, []);
}

// ---- tasks

const taskStatuses = ["running", "waiting", "completed", "failed", "cancelled"];
const perPage = 50;

// Tasks is what waits for a person, the dispatch form and the list of
// tasks: searched, filtered by status, counted and paged (50 a page), so
// that a thousand tasks draw as fast as fifty.
function Tasks({ tasks, clients, waiting, loaded }: { tasks: TaskSummary[]; clients: Map<string, Client>; waiting: { task: TaskSummary; p: Pending }[]; loaded: boolean }) {
  useSettleKeys(waiting.map((w) => ({ taskId: w.task.id, p: w.p })));
  const [q, setQ] = useState("");
  const [status, setStatus] = useState("");
  const [page, setPage] = useState(0);
  const counts = useMemo(() => {
    const c: Record<string, number> = {};
    for (const t of tasks) {
      c[t.status] = (c[t.status] || 0) + 1;
      if (t.open.length) c.waiting = (c.waiting || 0) + 1;
    }
    return c;
  }, [tasks]);
  const shown = useMemo(() => tasks.filter((t) =>
    (!status || (status === "waiting" ? t.open.length > 0 : t.status === status)) &&
    (!q || matches(q, `${t.request} ${t.client_id} ${t.id} ${t.status} ${t.error || ""} ${t.queued_by}`))), [tasks, q, status]);
  const pages = Math.max(1, Math.ceil(shown.length / perPage));
  const at = Math.min(page, pages - 1);
  const rows = shown.slice(at * perPage, (at + 1) * perPage);
  // The page's first useful paint: the first rows drawn from the
  // server's snapshot (BenchmarkPageLoad reads this mark), stamped in the
  // frame that paints them (a layout effect runs once they are in the
  // DOM).
  useLayoutEffect(() => {
    if (loaded && performance.getEntriesByName("saucer:listed").length === 0) {
      requestAnimationFrame(() => performance.mark("saucer:listed", { detail: { rows: document.querySelectorAll("tr[data-task]").length } }));
    }
  }, [loaded]);
  const filter = (f: () => void) => { f(); setPage(0); };
  return (
    <>
      <h1>Tasks</h1>
      <Dispatch clients={clients} />
      {waiting.length > 0 && (
        <section aria-labelledby="waiting-h">
          <h2 id="waiting-h">Waiting for you</h2>
          <ul class="pendings">
            {waiting.map((w) => (
              <>
                <li class="for"><a href={`#/tasks/${w.task.id}`}>{w.task.request}</a> on {w.task.client_id}</li>
                <PendingItem taskId={w.task.id} p={w.p} />
              </>
            ))}
          </ul>
        </section>
      )}
      <section aria-labelledby="tasks-h">
        <h2 id="tasks-h">All tasks</h2>
        {!loaded ? <p>Loading the tasks…</p> : tasks.length === 0 ? <p>No tasks yet.</p> : (
          <>
            <div class="filters">
              <div>
                <label for="task-q">Search tasks</label>
                <input id="task-q" type="search" value={q} placeholder="words of the request, device, id, error…" onInput={(e) => filter(() => setQ((e.target as HTMLInputElement).value))} />
              </div>
              <div>
                <label for="task-status">Status</label>
                <select id="task-status" value={status} onChange={(e) => filter(() => setStatus((e.target as HTMLSelectElement).value))}>
                  <option value="">all ({tasks.length})</option>
                  {taskStatuses.map((st) => <option value={st}>{st} ({counts[st] || 0})</option>)}
                </select>
              </div>
            </div>
            <p class="count dim" role="status">
              {shown.length === 0 ? `No task matches (of ${tasks.length})` :
                `Showing ${at * perPage + 1}–${at * perPage + rows.length} of ${shown.length} ${shown.length === 1 ? "task" : "tasks"}${shown.length < tasks.length ? ` (${tasks.length} in all)` : ""}`}
            </p>
            {rows.length > 0 && (
              <table class="tasks">
                <thead><tr><th scope="col">Task</th><th scope="col">Device</th><th scope="col">Status</th><th scope="col">Steps</th><th scope="col">Cost</th><th scope="col">Started</th></tr></thead>
                <tbody>
                  {rows.map((t) => (
                    <tr data-task={t.id} key={t.id}>
                      <td><a href={`#/tasks/${t.id}`}>{t.request}</a>{t.open.length > 0 && <span class="badge on">{t.open.length} waiting</span>}{t.error && <div class="error">{t.error}</div>}</td>
                      <td>{t.client_id}</td>
                      <td><Status s={t.status} /></td>
                      <td>{t.steps}</td>
                      <td class="cost">{costText(t.usage, t.cost)}</td>
                      <td class="when">{when(t.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <Pager page={at} pages={pages} set={setPage} label="Task pages" />
          </>
        )}
      </section>
    </>
  );
}

function Dispatch({ clients }: { clients: Map<string, Client> }) {
  const all = [...clients.values()].filter((c) => c.client_type === "device").sort((a, b) => a.client_id.localeCompare(b.client_id));
  const [find, setFind] = useState("");
  const [device, setDevice] = useState("");
  const [request, setRequest] = useState("");
  const [error, setError] = useState("");
  // The drop-down holds the devices the search matches (connected first),
  // at most 100 of them.
  const matching = all.filter((d) => !find || matches(find, `${d.client_id} ${d.status} ${d.platform} ${d.device_info?.hostname || ""}`))
    .sort((a, b) => Number(b.status === "connected") - Number(a.status === "connected"));
  const devices = matching.slice(0, 100);
  const chosen = (device && devices.some((d) => d.client_id === device) ? device : "") || devices.find((d) => d.status === "connected")?.client_id || "";
  const submit = async (e: Event) => {
    e.preventDefault();
    setError("");
    try {
      const r = await call<{ task_id: string }>("POST", "/api/dispatch", { client_id: chosen, request, task_name: "console" });
      setRequest("");
      go("tasks/" + r.task_id);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  };
  return (
    <section aria-labelledby="dispatch-h">
      <h2 id="dispatch-h">Dispatch a task</h2>
      <form class="dispatch" onSubmit={submit}>
        {all.length > 8 && (
          <>
            <label for="device-q">Find a device</label>
            <input id="device-q" type="search" value={find} placeholder="name, status, platform, host…" onInput={(e) => setFind((e.target as HTMLInputElement).value)} />
            <p class="dim" role="status">{matching.length} of {all.length} devices match{matching.length > devices.length ? ` (the first ${devices.length} listed)` : ""}</p>
          </>
        )}
        <label for="device">Device</label>
        <select id="device" value={chosen} onChange={(e) => setDevice((e.target as HTMLSelectElement).value)}>
          {devices.length === 0 && <option value="">{all.length ? "no device matches" : "no device connected"}</option>}
          {devices.map((d) => <option value={d.client_id}>{d.client_id} ({d.status})</option>)}
        </select>
        <label for="request">Request</label>
        <textarea id="request" rows={2} required value={request} onInput={(e) => setRequest((e.target as HTMLTextAreaElement).value)} />
        <button type="submit" disabled={!chosen}>Dispatch</button>
        {error && <p class="error" role="alert">{error}</p>}
      </form>
    </section>
  );
}

// useTask follows one task's stream.
function useTask(id: string) {
  const [info, setInfo] = useState<TaskInfo | null>(null);
  const [decision, setDecision] = useState<Decision | null>(null);
  const [progress, setProgress] = useState<Map<string, Progress>>(new Map());
  const [missing, setMissing] = useState("");
  useEffect(() => {
    setInfo(null);
    setMissing("");
    call<TaskInfo>("GET", `/api/tasks/${encodeURIComponent(id)}`).catch((e) => e instanceof APIError && e.status === 404 && setMissing(e.message));
    return stream(`/api/tasks/${encodeURIComponent(id)}/events`, (type, data) => {
      if (type === "decision") return setDecision(data);
      if (type === "progress") return setProgress((m) => new Map(m).set(data.call_id, data));
      if (type === "end") call<TaskInfo>("GET", `/api/tasks/${encodeURIComponent(id)}`).then(setInfo, () => undefined);
      setInfo((cur) => {
        if (type === "snapshot") {
          setProgress(new Map((data.progress || []).map((p: Progress) => [p.call_id, p])));
          return data;
        }
        if (!cur) return cur;
        const next = { ...cur };
        switch (type) {
          case "step": {
            const steps = next.steps.slice();
            const i = steps.findIndex((s) => s.n === data.n);
            if (i >= 0) steps[i] = data;
            else steps.push(data);
            next.steps = steps;
            break;
          }
          case "command": {
            const cmds = next.commands.slice();
            const i = cmds.findIndex((c) => c.call_id === data.call_id);
            if (i >= 0) cmds[i] = data;
            else cmds.push(data);
            next.commands = cmds;
            break;
          }
          case "pending": {
            const ps = next.pending.slice();
            const i = ps.findIndex((p) => p.id === data.id);
            if (i >= 0) ps[i] = data;
            else ps.push(data);
            next.pending = ps;
            break;
          }
          case "task":
          case "end":
            Object.assign(next, { status: data.status, error: data.error, ended_at: data.ended_at, usage: data.usage, cost: data.cost });
            break;
        }
        return next;
      });
    }, () => undefined);
  }, [id]);
  return { info, decision, progress, missing };
}

function TaskView({ id }: { id: string; summary?: TaskSummary }) {
  const { info, decision, progress, missing } = useTask(id);
  const [error, setError] = useState("");
  const open = (info?.pending || []).filter((p) => p.status === "open");
  useSettleKeys(open.map((p) => ({ taskId: id, p })));
  const cancel = async () => {
    setError("");
    try {
      await call("DELETE", `/api/tasks/${encodeURIComponent(id)}`);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  const cancelRef = useRef(cancel);
  cancelRef.current = cancel;
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (!typing(e) && e.key === "x" && confirm("Cancel this task?")) cancelRef.current();
    };
    addEventListener("keydown", on);
    return () => removeEventListener("keydown", on);
  }, []);
  if (missing) return <p class="error" role="alert">{missing}</p>;
  if (!info) return <p>Loading the task…</p>;
  const cmds = new Map(info.commands.map((c) => [c.call_id, c]));
  const running = info.commands.filter((c) => c.state === "pending" || c.state === "running");
  return (
    <article class="task" data-status={info.status}>
      <h1>{info.request}</h1>
      <p class="meta">
        <Status s={info.status} /> on <a href={`#/devices/${encodeURIComponent(info.client_id)}`}>{info.client_id}</a> · queued by <span class="by">{you(info.queued_by)}</span> · started {when(info.created_at)}
        {info.ended_at && <> · ended {when(info.ended_at)}</>} · <a href={`#/runs/${info.id}`}>recording</a>
      </p>
      <p class="usage">{usageLine(info.usage, info.cost)}</p>
      {info.status === "cancelled" ? <p class="error failure cancelled" role="alert">{cancelled(info.error)}</p> : (
        <>
          {info.error && <p class="error failure" role="alert">Failed: {info.error}</p>}
          {info.result && <p class="result">Answer: {info.result}</p>}
        </>
      )}
      {info.status === "running" && <button class="decline" onClick={cancel}>Cancel task</button>}
      {error && <p class="error" role="alert">{error}</p>}
      {open.length > 0 && (
        <section aria-labelledby="open-h">
          <h2 id="open-h">Waiting for you</h2>
          <ul class="pendings">{open.map((p, i) => <PendingItem taskId={id} p={p} autofocus={i === 0 && p.kind === "question"} />)}</ul>
        </section>
      )}
      {(running.length > 0 || (decision && info.status === "running")) && (
        <section class="now" aria-labelledby="now-h">
          <h2 id="now-h">Now</h2>
          {decision && info.status === "running" && <p class="thought">{decision.agent}: {decision.thought || decision.status}</p>}
          <ul class="live">
            {running.map((c) => <LiveCommand taskId={id} c={c} p={progress.get(c.call_id)} />)}
          </ul>
        </section>
      )}
      <section aria-labelledby="steps-h">
        <h2 id="steps-h">Steps</h2>
        {info.steps_omitted ? <p>{info.steps_omitted} earlier steps are in the recording.</p> : null}
        <ol class="steps">{info.steps.map((s) => <StepItem s={s} cmds={cmds} progress={progress} />)}</ol>
      </section>
      {info.pending.some((p) => p.status !== "open") && (
        <section aria-labelledby="settled-h">
          <h2 id="settled-h">Questions and approvals</h2>
          <ul class="settled">
            {info.pending.filter((p) => p.status !== "open").map((p) => (
              <li data-pending={p.id}>{p.kind === "question" ? `${p.question} → ${p.answer || "(no answer)"}` : `${p.reason}: ${p.approved ? "approved" : "declined"}`} ({p.status}{p.settled_by ? ` by ${you(p.settled_by)}` : ""})</li>
            ))}
          </ul>
        </section>
      )}
    </article>
  );
}

// LiveCommand is a command being run, its latest progress, and a button
// that stops it alone (the task goes on).
function LiveCommand({ taskId, c, p }: { taskId: string; c: CommandState; p?: Progress }) {
  const pct = p && p.total ? Math.min(100, Math.round((100 * p.progress) / p.total)) : undefined;
  const [error, setError] = useState("");
  const [asked, setAsked] = useState(false);
  const stop = async () => {
    setError("");
    setAsked(true);
    try {
      await call("POST", `/api/tasks/${encodeURIComponent(taskId)}/commands/${encodeURIComponent(c.call_id)}/cancel`);
    } catch (e) {
      setAsked(false);
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  const name = (c.namespace ? c.namespace + "." : "") + c.tool_name;
  return (
    <li class="live-cmd" data-call={c.call_id} data-state={c.state}>
      <code>{name}</code> <span class="state">{c.state}</span>
      {c.state === "running" && <span class="elapsed" data-elapsed={c.elapsed_ms}> · running for {secs(c.elapsed_ms)}</span>}
      {c.state === "running" && (
        <button class="decline cancel-cmd" onClick={stop} disabled={asked} aria-label={`Cancel ${name}`}>
          {asked ? "Cancelling…" : "Cancel"}
        </button>
      )}
      {error && <p class="error" role="alert">{error}</p>}
      {p && (
        <div class="progress" data-progress={p.progress}>
          {pct !== undefined && <progress max={100} value={pct} aria-label="progress">{pct}%</progress>}
          <span>{p.message || `${p.progress}${p.total ? " of " + p.total : ""}`}</span>
          {p.lines && p.lines.length > 0 && <pre class="lines">{p.lines.join("\n")}</pre>}
        </div>
      )}
    </li>
  );
}

// stepTokens is a step's tokens, "~" when Saucer counted them.
function stepTokens(u: Usage): string {
  const est = u.estimated ? "~" : "";
  const cached = u.cached_tokens && u.prompt_tokens ? ` (${Math.round((100 * u.cached_tokens) / u.prompt_tokens)}% cached)` : "";
  return `${est}${u.prompt_tokens}+${est}${u.completion_tokens} tokens${cached}${u.estimated ? " (estimated)" : ""}`;
}

// cancelled says who cancelled a task ("Cancelled by you"), from its
// error ("cancelled by ops").
function cancelled(error?: string): string {
  const m = (error || "").match(/^cancelled by (.*)$/);
  if (m) return `Cancelled by ${you(m[1])}`;
  return error ? `Cancelled: ${error.replace(/^cancelled:?\s*/, "")}` : "Cancelled";
}

// Output is a command's output as saucer run prints it: a shell
// command's result ({"stdout", "stderr", "exit_code"}) as its lines and
// its exit code; anything else as it came.
function Output({ text }: { text: string }) {
  let r: { stdout?: unknown; stderr?: unknown; exit_code?: unknown; truncated?: boolean } | null = null;
  if (text.startsWith("{")) {
    try {
      r = JSON.parse(text);
    } catch {
      r = null;
    }
  }
  if (!r || typeof r !== "object" || typeof r.stdout !== "string" || typeof r.stderr !== "string" || typeof r.exit_code !== "number") return <pre class="out">{text}</pre>;
  const trim = (x: string) => x.replace(/\n$/, "");
  return (
    <div class="cmd-out" data-exit={r.exit_code}>
      {r.stdout && <pre class="out stdout" aria-label="standard output">{trim(r.stdout)}</pre>}
      {r.stderr && <pre class="out stderr" aria-label="standard error">{trim(r.stderr)}</pre>}
      <p class={r.exit_code === 0 ? "exit dim" : "exit error"}>{r.exit_code === 0 ? "exit code 0" : `exit code ${r.exit_code}`}{!r.stdout && !r.stderr ? " · no output" : ""}{r.truncated ? " · output cut" : ""}</p>
    </div>
  );
}

// unreported is what the page knows of a command whose result never came
// ("the device did not report whether it ran"): it did run when the
// device reported it running, or streamed its output.
function unreported(error: string, st?: CommandState, p?: Progress): string {
  const why = "the device did not report whether it ran";
  if (!error.includes(why)) return error;
  const lines = p?.lines?.length || 0;
  const ran = (st?.elapsed_ms || 0) > 0 || lines > 0 || (p?.progress || 0) > 0;
  if (!ran) return error;
  const seen = [st?.elapsed_ms ? `reported it running for ${secs(st.elapsed_ms)}` : "", lines ? `streamed ${lines} line${lines === 1 ? "" : "s"} of its output` : ""].filter(Boolean).join(" and ");
  return error.replace(why, `it was running when it was stopped (the device ${seen || "reported its progress"}); its final result never came`);
}

function StepItem({ s, cmds, progress }: { s: Step; cmds?: Map<string, CommandState>; progress?: Map<string, Progress> }) {
  return (
    <li class="step" data-n={s.n} id={`step-${s.n}`}>
      <p class="head"><strong>{s.agent}</strong> step {s.step} <Status s={s.status || "…"} /> <span class="dim">{secs(s.duration_ms)}</span>
        {s.usage && <span class="dim tokens"> · {stepTokens(s.usage)}</span>}
      </p>
      {s.thought && <p class="thought">{s.thought}</p>}
      {(s.actions || []).map((a) => {
        const st = a.call_id ? cmds?.get(a.call_id) : undefined;
        return (
          <div class={`action ${a.status || "notrun"}`} data-call={a.call_id}>
            <code>{a.call}</code> → <span class="rstatus">{a.status || "not run"}</span>{st && st.elapsed_ms ? <span class="dim"> ({secs(st.elapsed_ms)})</span> : null}
            {a.output && <Output text={a.output} />}
            {a.error && <pre class="out err">{unreported(a.error, st, a.call_id ? progress?.get(a.call_id) : undefined)}</pre>}
            {a.error && a.call_id && progress?.get(a.call_id)?.lines?.length ? <pre class="out lines" aria-label="its output as it streamed">{progress.get(a.call_id)!.lines!.join("\n")}</pre> : null}
          </div>
        );
      })}
      {s.result && <p class="result">Result: {s.result}</p>}
      {s.error && <p class="error">{s.error}</p>}
      {s.screenshot && <Shot s={s.screenshot} />}
    </li>
  );
}

function Shot({ s }: { s: NonNullable<Step["screenshot"]> }) {
  return (
    <figure class="shot">
      <div class="frame">
        <img src={s.url} alt="The screenshot the model saw, with the controls' marks" width={s.width} height={s.height} loading="lazy" />
        {s.clicked && s.width && s.height ? <span class="mark" style={{ left: `${(100 * (s.x || 0)) / s.width}%`, top: `${(100 * (s.y || 0)) / s.height}%` }} title="clicked here" /> : null}
      </div>
    </figure>
  );
}

// ---- recorded runs

function Runs() {
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    call<{ runs: RunSummary[] }>("GET", "/api/runs").then((r) => setRuns(r.runs), (e) => setError(String(e.message || e)));
  }, []);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!runs) return <p>Loading the recordings…</p>;
  return (
    <section aria-labelledby="runs-h">
      <h1 id="runs-h">Recorded runs</h1>
      {runs.length === 0 ? <p>No recordings.</p> : (
        <table>
          <thead><tr><th scope="col">Task</th><th scope="col">Model</th><th scope="col">Ended</th><th scope="col">Started</th></tr></thead>
          <tbody>{runs.map((r) => <tr><td><a href={`#/runs/${r.id}`}>{r.task}</a></td><td>{r.model}</td><td>{r.status ? <Status s={r.status} /> : "no end"}</td><td>{new Date(r.started_at).toLocaleString()}</td></tr>)}</tbody>
        </table>
      )}
    </section>
  );
}

// personWhy says why a replay diverged where the run had a person's
// answer: a replay has no person to ask, so its approvals are declined
// and its questions go unanswered, and the model is asked something the
// recording never saw. "" when the diff shows no such answer.
function personWhy(diff: string): string {
  const approval = /"name": "request_approval"/.test(diff);
  const question = /"name": "ask_user"/.test(diff);
  if (!approval && !question) return "";
  const what = approval && question ? "a person's answers (a question and an approval)" : approval ? "a person's approval" : "a person's answer to a question";
  const then = approval && question ? "its approvals are declined and its questions go unanswered" : approval ? "the approval is declined and its commands do not run" : "the question goes unanswered";
  return `Why: the recorded run had ${what}. A replay has no person to ask, so ${then}; from there the model is asked what the recording never asked it, and the replay stops. The difference below shows where.`;
}

function RunView({ id }: { id: string }) {
  const [run, setRun] = useState<RunInfo | null>(null);
  const [error, setError] = useState("");
  const [cur, setCur] = useState(0);
  const [replay, setReplay] = useState<ReplayInfo | "running" | null>(null);
  useEffect(() => {
    call<RunInfo>("GET", `/api/runs/${encodeURIComponent(id)}`).then(setRun, (e) => setError(String(e.message || e)));
  }, [id]);
  const n = run ? run.steps.length : 0;
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (typing(e)) return;
      if (e.key === "j" || e.key === "ArrowRight") setCur((c) => Math.min(c + 1, n - 1));
      if (e.key === "k" || e.key === "ArrowLeft") setCur((c) => Math.max(c - 1, 0));
    };
    addEventListener("keydown", on);
    return () => removeEventListener("keydown", on);
  }, [n]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!run) return <p>Loading the recording…</p>;
  const doReplay = async () => {
    setReplay("running");
    try {
      setReplay(await call<ReplayInfo>("POST", `/api/runs/${encodeURIComponent(id)}/replay`));
    } catch (e) {
      setReplay(null);
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  const step = run.steps[cur];
  return (
    <article class="run">
      <h1>{run.task}</h1>
      <p class="meta">{run.model} · {new Date(run.started_at).toLocaleString()} · {run.status ? <Status s={run.status} /> : "no end recorded"}</p>
      {run.answer && <p class="result">Answer: {run.answer}</p>}
      {run.error && <p class="error">{run.error}</p>}
      <p class="usage">{usageLine(run.usage, run.cost, run.model_calls)}</p>
      <div class="row">
        <button onClick={doReplay} disabled={replay === "running"}>{replay === "running" ? "Replaying…" : "Replay against the recording"}</button>
      </div>
      {replay && replay !== "running" && (
        <section class="replay" aria-label="Replay">
          <p class={replay.identical ? "ok" : "error"}>{replay.identical ? `Identical to the recording: ${replay.model_calls} model calls, ${replay.dispatches} dispatches.` : "Diverged from the recording:"}</p>
          {!replay.identical && replay.diff && personWhy(replay.diff) && <p class="why">{personWhy(replay.diff)}</p>}
          {replay.diff && <pre class="diff" tabIndex={0} aria-label="Where the replay diverged">{replay.diff}</pre>}
        </section>
      )}
      {n === 0 ? <p>The recording has no steps.</p> : (
        <section aria-label="Steps">
          <nav class="stepnav" aria-label="Step navigation">
            <button onClick={() => setCur(Math.max(cur - 1, 0))} disabled={cur === 0}>Previous</button>
            <span role="status">Step {cur + 1} of {n}</span>
            <button onClick={() => setCur(Math.min(cur + 1, n - 1))} disabled={cur === n - 1}>Next</button>
          </nav>
          <ol class="steps one" start={cur + 1}><StepItem s={step} /></ol>
        </section>
      )}
    </article>
  );
}

// ---- eval reports

function Evals() {
  const [list, setList] = useState<EvalSummary[] | null>(null);
  const [error, setError] = useState("");
  const [a, setA] = useState("");
  const [b, setB] = useState("");
  const [cmp, setCmp] = useState("");
  useEffect(() => {
    call<{ evals: EvalSummary[] }>("GET", "/api/evals").then((r) => setList(r.evals), (e) => setError(String(e.message || e)));
  }, []);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!list) return <p>Loading the eval reports…</p>;
  const compare = async (e: Event) => {
    e.preventDefault();
    try {
      const r = await call<{ text: string }>("GET", `/api/evals/compare?a=${encodeURIComponent(a || list[0]?.name)}&b=${encodeURIComponent(b || list[0]?.name)}`);
      setCmp(r.text);
    } catch (err) {
      setCmp(err instanceof Error ? err.message : String(err));
    }
  };
  return (
    <section aria-labelledby="evals-h">
      <h1 id="evals-h">Eval reports</h1>
      {list.length === 0 ? <p>No eval results. Give <code>saucer serve --evals DIR</code> a results directory of <code>saucer eval -o</code>.</p> : (
        <>
          <table>
            <thead><tr><th scope="col">Results</th><th scope="col">Suite</th><th scope="col">Success</th><th scope="col">Cases</th><th scope="col">Reports</th></tr></thead>
            <tbody>
              {list.map((e) => (
                <tr>
                  <td>{e.name}</td><td>{e.suite}</td><td>{(100 * e.success_rate).toFixed(1)}%</td><td>{e.cases} ({e.trials} trials)</td>
                  <td>{e.files.map((f) => <a class="file" href={`/api/evals/${encodeURIComponent(e.name)}/${f}`} target="_blank" rel="noopener">{f}</a>)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <form class="compare" onSubmit={compare}>
            <label for="cmp-a">Compare</label>
            <select id="cmp-a" value={a} onChange={(e) => setA((e.target as HTMLSelectElement).value)}>{list.map((e) => <option value={e.name}>{e.name}</option>)}</select>
            <label for="cmp-b">with</label>
            <select id="cmp-b" value={b} onChange={(e) => setB((e.target as HTMLSelectElement).value)}>{list.map((e) => <option value={e.name}>{e.name}</option>)}</select>
            <button type="submit">Compare</button>
          </form>
          {cmp && <pre class="diff" aria-label="Comparison">{cmp}</pre>}
        </>
      )}
    </section>
  );
}

render(<App />, document.getElementById("app")!);
