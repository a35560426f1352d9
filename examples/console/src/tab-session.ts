/**
 * The session of this tab, so a reload does not sign the operator out: the API URL and the
 * token in sessionStorage, which lives only as long as the tab, is never shared with another
 * tab and is not kept once the tab closes. Sign-out and a token the API no longer takes end it.
 * (The price: script running in the page can read it, as it could read the token from the
 * admin client's closure while the page is open.) index.html reads the same key before the
 * first paint, to show no sign-in form while a reloaded tab signs in again.
 * @module
 */

const KEY = "stratum-console.session";

/** What a tab keeps of its session. */
export interface TabSession {
  apiUrl: string;
  token: string;
}

/** The tab's saved session, if it has a whole one. */
export function loadTabSession(): TabSession | undefined {
  let saved: { apiUrl?: unknown; token?: unknown } | null;
  try {
    saved = JSON.parse(sessionStorage.getItem(KEY) ?? "null") as typeof saved;
  } catch {
    return undefined;
  }
  return typeof saved?.apiUrl === "string" && typeof saved.token === "string"
    ? { apiUrl: saved.apiUrl, token: saved.token }
    : undefined;
}

/** Keeps the session for the tab (after a sign-in the API accepted). */
export function saveTabSession(session: TabSession): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

/** Ends the tab's session (sign-out, a token no longer accepted). */
export function forgetTabSession(): void {
  sessionStorage.removeItem(KEY);
}
