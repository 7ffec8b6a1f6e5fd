// The inspector's only way to the data: the /v1 JSON API with the key from session storage as a Bearer token.
const KEY = "palimpsest.key";
const USER = "palimpsest.user";

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set key(value) { if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY); },
  get user() { return sessionStorage.getItem(USER); },
  set user(value) { if (value) sessionStorage.setItem(USER, value); else sessionStorage.removeItem(USER); },
};

export class ApiError extends Error {
  constructor(status, body) {
    const problems = (body && body.problems || []).map(p => `${p.field}: ${p.fix}`).join("; ");
    super(`${body && body.message || "request failed"} (HTTP ${status})${problems ? ": " + problems : ""}`);
    this.status = status;
    this.body = body;
  }
}

// A 503 (the server at capacity) or 429 (the key over its rate) did nothing: the request is sent again after the
// answer's Retry-After (at most MAX_WAIT_S), as the CLI's client and RemoteMemory do; the last refusal is shown.
const RETRIED = new Set([429, 503]);
const TRIES = 4;
const MAX_WAIT_S = 10;
const pause = seconds => new Promise(resolve => setTimeout(resolve, seconds * 1000));

export async function api(method, path, body, key = session.key) {
  const headers = {Authorization: `Bearer ${key || ""}`};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
    let data = null;
    try { data = await response.json(); } catch (_) { data = null; }
    if (response.ok) return data;
    if (!RETRIED.has(response.status) || attempt === TRIES) throw new ApiError(response.status, data);
    const told = parseFloat(response.headers.get("Retry-After"));
    await pause(Math.min(MAX_WAIT_S, Number.isFinite(told) && told >= 0 ? told : 1));
  }
}

// Paths of one user of the key's tenant (the user id is a path segment: encoded).
export const userPath = (rest = "") => `/v1/users/${encodeURIComponent(session.user || "")}${rest}`;

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const text = q.toString();
  return text ? `?${text}` : "";
}
