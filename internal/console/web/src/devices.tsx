// Devices: the list, and one device with its apps and tools.
import { useEffect, useMemo, useState } from "preact/hooks";
import { call } from "./api";
import { matches, message, Pager, Status, when } from "./common";
import type { Client, DeviceTool, DeviceTools, TaskSummary } from "./types";

const perPage = 20;

// Devices lists the devices: searched, filtered by status, counted and
// paged (20 a page).
export function Devices({ clients, tasks }: { clients: Map<string, Client>; tasks: TaskSummary[] }) {
  const list = useMemo(() => [...clients.values()].sort((a, b) => a.client_id.localeCompare(b.client_id)), [clients]);
  const [q, setQ] = useState("");
  const [status, setStatus] = useState("");
  const [page, setPage] = useState(0);
  const statuses = [...new Set(list.map((c) => c.status))].sort();
  const shown = list.filter((c) => (!status || c.status === status) &&
    (!q || matches(q, `${c.client_id} ${c.status} ${c.client_type} ${c.platform} ${c.device_info?.hostname || ""} ${c.device_info?.os_version || ""} ${Object.keys(c.namespaces || {}).join(" ")}`)));
  const pages = Math.max(1, Math.ceil(shown.length / perPage));
  const at = Math.min(page, pages - 1);
  const rows = shown.slice(at * perPage, (at + 1) * perPage);
  const filter = (f: () => void) => { f(); setPage(0); };
  return (
    <section aria-labelledby="devices-h">
      <h1 id="devices-h">Devices</h1>
      {list.length === 0 ? <p>No device is registered. Start one with <code>saucer client --server ws://HOST:PORT/ws --id NAME</code>.</p> : (
        <>
          <div class="filters">
            <div>
              <label for="device-search">Search devices</label>
              <input id="device-search" type="search" value={q} placeholder="name, host, platform, app…" onInput={(e) => filter(() => setQ((e.target as HTMLInputElement).value))} />
            </div>
            <div>
              <label for="device-status">Status</label>
              <select id="device-status" value={status} onChange={(e) => filter(() => setStatus((e.target as HTMLSelectElement).value))}>
                <option value="">all ({list.length})</option>
                {statuses.map((st) => <option value={st}>{st} ({list.filter((c) => c.status === st).length})</option>)}
              </select>
            </div>
          </div>
          <p class="count dim" role="status">
            {shown.length === 0 ? `No device matches (of ${list.length})` :
              `Showing ${at * perPage + 1}–${at * perPage + rows.length} of ${shown.length} ${shown.length === 1 ? "device" : "devices"}${shown.length < list.length ? ` (${list.length} in all)` : ""}`}
          </p>
          <ul class="devices">{rows.map((c) => <DeviceCard c={c} tasks={tasks} link />)}</ul>
          <Pager page={at} pages={pages} set={setPage} label="Device pages" />
        </>
      )}
    </section>
  );
}

// DeviceCard is a device's status, system, task and apps; link makes its
// name lead to its page (its tools).
function DeviceCard({ c, tasks, link, heading = true }: { c: Client; tasks: TaskSummary[]; link?: boolean; heading?: boolean }) {
  const running = tasks.filter((t) => t.client_id === c.client_id && t.status === "running");
  const di = c.device_info || {};
  const n = c.tools?.count || 0;
  return (
    <li class="device" data-client={c.client_id}>
      {heading && <h2>{link ? <a href={`#/devices/${encodeURIComponent(c.client_id)}`}>{c.client_id}</a> : c.client_id} <Status s={c.status} /></h2>}
      <p>{c.client_type} · {c.platform} {di.os_version || ""} {di.arch || ""} · {di.hostname || ""}{di.cpu_count ? ` · ${di.cpu_count} CPUs` : ""}{di.memory_total_gb ? ` · ${di.memory_total_gb.toFixed(1)} GB` : ""}{c.server ? ` · server ${c.server}` : ""}</p>
      <p>Last seen {when(c.last_seen)}</p>
      <p>{running.length ? <>Running: {running.map((t) => <a href={`#/tasks/${t.id}`}>{t.request}</a>)}</> : "Idle"}</p>
      {c.namespaces && (
        <dl class="apps">
          {Object.entries(c.namespaces).sort().map(([n, d]) => <><dt>{n}</dt><dd>{d || "—"}</dd></>)}
        </dl>
      )}
      {link && <p class="tools-count"><a href={`#/devices/${encodeURIComponent(c.client_id)}`}>{n ? `${n} tools` : "Tools"}</a>{c.tools?.source === "task" ? " (from its last task)" : ""}</p>}
    </li>
  );
}

export function DeviceView({ id, client, tasks }: { id: string; client?: Client; tasks: TaskSummary[] }) {
  const [tools, setTools] = useState<DeviceTools | null>(null);
  const [error, setError] = useState("");
  const [q, setQ] = useState("");
  // Asked again whenever the server learns the tools anew.
  const learned = client?.tools?.learned_at || "";
  useEffect(() => {
    call<DeviceTools>("GET", `/api/clients/${encodeURIComponent(id)}/tools`).then((t) => { setTools(t); setError(""); }, (e) => setError(message(e)));
  }, [id, learned]);
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = (tools?.tools || []).filter((t) => {
    const text = `${t.namespace}.${t.name} ${t.title || ""} ${t.description || ""} ${hints(t).join(" ")}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
  const byNS = new Map<string, DeviceTool[]>();
  for (const t of shown) byNS.set(t.namespace, [...(byNS.get(t.namespace) || []), t]);
  return (
    <article class="device-page">
      <p><a href="#/devices">All devices</a></p>
      <h1>{id}{client && <> <Status s={client.status} /></>}</h1>
      {client && <ul class="devices"><DeviceCard c={client} tasks={tasks} heading={false} /></ul>}
      {!client && <p class="error" role="alert">{id} is not registered now.</p>}
      <section aria-labelledby="tools-h">
        <h2 id="tools-h">Tools</h2>
        {error && <p class="error" role="alert">{error}</p>}
        {tools && (
          <>
            <p class="note">{tools.note}{tools.task_id && <> (<a href={`#/tasks/${tools.task_id}`}>the task</a>)</>}</p>
            {tools.tools.length > 0 && (
              <div class="search">
                <label for="tool-q">Search tools</label>
                <input id="tool-q" type="search" value={q} placeholder="name, app, words of its description, read-only…" onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
                <p class="dim" role="status">{shown.length} of {tools.tools.length} tools</p>
              </div>
            )}
            {[...byNS].map(([ns, list]) => (
              <section class="ns" aria-label={`${ns} tools`}>
                <h3>{ns}</h3>
                <ul class="tools">
                  {list.map((t) => (
                    <li class="tool" data-tool={`${t.namespace}.${t.name}`}>
                      <code>{t.name}</code>{t.title && t.title !== t.name ? <span class="dim"> {t.title}</span> : null}
                      <span class="hints">{hints(t).map((h) => <span class={`hint h-${h.replace(/[^a-z]+/g, "-")}`}>{h}</span>)}</span>
                      {t.description && <p>{t.description}</p>}
                    </li>
                  ))}
                </ul>
              </section>
            ))}
          </>
        )}
      </section>
    </article>
  );
}

// hints are a tool's annotations in words: its risk class, MCP's hints,
// what it streams.
function hints(t: DeviceTool): string[] {
  const out: string[] = [];
  if (t.risk) out.push(t.risk);
  const a = t.annotations || {};
  if (a.read_only) out.push("read-only");
  if (a.destructive && t.risk !== "destructive") out.push("destructive");
  if (a.idempotent) out.push("idempotent");
  if (a.open_world) out.push("open world");
  for (const s of t.streams || []) out.push(`streams ${s}`);
  return out;
}
