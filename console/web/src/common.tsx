// Small pieces every view uses.

export const go = (path: string) => (location.hash = "#/" + path);

export const time = (s?: string) => (s ? new Date(s).toLocaleTimeString() : "");
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
