// The console's only way to the server: its HTTP API and event streams.

export let csrf = "";

export class APIError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

// call sends a request; changes carry the session's CSRF token.
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  const text = await r.text();
  let data: any = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!r.ok) {
    throw new APIError(r.status, (data && data.error) || text || r.statusText);
  }
  return data as T;
}

import { setMe } from "./common";

export interface Session { csrf: string; expires_at: string; open?: boolean; as?: string }

export async function session(): Promise<boolean> {
  try {
    const s = await call<Session>("GET", "/api/session");
    csrf = s.csrf || "";
    setMe(s.as || "");
    return true;
  } catch (e) {
    if (e instanceof APIError && e.status === 401) return false;
    throw e;
  }
}

export async function login(key: string): Promise<void> {
  const s = await call<Session>("POST", "/api/login", { key });
  csrf = s.csrf || "";
  setMe(s.as || "");
}

export async function logout(): Promise<void> {
  await call("POST", "/api/logout");
  csrf = "";
}

// Stream follows one of the API's event streams; the browser reconnects
// by itself, resuming after the last event it saw.
export const serverEvents = ["snapshot", "task", "end", "pending", "client", "client_gone", "resync", "step", "decision", "command", "progress"];

export function stream(path: string, on: (type: string, data: any, id: string) => void, state: (live: boolean) => void, types = serverEvents): () => void {
  const es = new EventSource(path);
  for (const t of types) {
    es.addEventListener(t, (ev: MessageEvent) => on(t, JSON.parse(ev.data), ev.lastEventId));
  }
  es.onopen = () => state(true);
  es.onerror = () => state(false);
  return () => es.close();
}
