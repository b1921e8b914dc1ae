// Small pieces every view uses.

export const go = (path: string) => (location.hash = "#/" + path);

export const time = (s?: string) => (s ? new Date(s).toLocaleTimeString() : "");
// when is a moment with its date: "7 Dec 2026, 14:03:12".
export const when = (s?: string) => (s ? new Date(s).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" }) : "");

// you says "you" for the name the server records this session's actions
// under (its key's label), and the name otherwise.
export const you = (by?: string) => (by && by === me() ? "you" : by || "");
let meName = "";
export const me = () => meName;
export const setMe = (n: string) => (meName = n);

// Pager is a list's page: Previous, "Page 2 of 20", Next.
export function Pager({ page, pages, set, label }: { page: number; pages: number; set: (p: number) => void; label: string }) {
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button onClick={() => set(page - 1)} disabled={page === 0}>Previous</button>
      <span>Page {page + 1} of {pages}</span>
      <button onClick={() => set(page + 1)} disabled={page >= pages - 1}>Next</button>
    </nav>
  );
}

// matches says every word of q is in text (case aside).
export const matches = (q: string, text: string) => {
  const t = text.toLowerCase();
  return q.toLowerCase().split(/\s+/).filter(Boolean).every((w) => t.includes(w));
};
export const secs = (ms?: number) => (ms === undefined ? "" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

export function Status({ s }: { s: string }) {
  return <span class={`status s-${s.toLowerCase()}`}>{s}</span>;
}

// typing says a key went to a field (or with a modifier): not a shortcut.
export const typing = (e: KeyboardEvent) => {
  const t = e.target as HTMLElement;
  return e.ctrlKey || e.metaKey || e.altKey || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName) || t.isContentEditable;
};

export const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
