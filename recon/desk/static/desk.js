// The desk's only script: the WebAuthn calls (enroll, sign in, sign a decision or a request) and the POSTs
// that carry the session's CSRF token. Everything it shows goes through textContent.
"use strict";

const b64u = {
  toBytes(s) {
    const pad = "=".repeat((4 - (s.length % 4)) % 4);
    const bin = atob((s + pad).replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  },
  from(buf) {
    const bytes = new Uint8Array(buf);
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  },
};

function say(line) {
  document.getElementById("outcome").textContent = line;
}

async function post(path, body) {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const res = await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify(body || {}),
  });
  let answer;
  try { answer = await res.json(); } catch (e) { answer = { ok: false, line: await res.text() }; }
  return answer;
}

function requestOptions(o) {
  const out = { ...o, challenge: b64u.toBytes(o.challenge) };
  if (o.allowCredentials) {
    out.allowCredentials = o.allowCredentials.map((c) => ({ ...c, id: b64u.toBytes(c.id) }));
  }
  return out;
}

function creationOptions(o) {
  const out = { ...o, challenge: b64u.toBytes(o.challenge), user: { ...o.user, id: b64u.toBytes(o.user.id) } };
  if (o.excludeCredentials) {
    out.excludeCredentials = o.excludeCredentials.map((c) => ({ ...c, id: b64u.toBytes(c.id) }));
  }
  return out;
}

function assertionJSON(cred) {
  const r = cred.response;
  return {
    id: cred.id, rawId: b64u.from(cred.rawId), type: cred.type,
    response: {
      authenticatorData: b64u.from(r.authenticatorData),
      clientDataJSON: b64u.from(r.clientDataJSON),
      signature: b64u.from(r.signature),
      userHandle: r.userHandle ? b64u.from(r.userHandle) : null,
    },
    clientExtensionResults: {},
  };
}

function registrationJSON(cred) {
  const r = cred.response;
  return {
    id: cred.id, rawId: b64u.from(cred.rawId), type: cred.type,
    response: {
      clientDataJSON: b64u.from(r.clientDataJSON),
      attestationObject: b64u.from(r.attestationObject),
      transports: r.getTransports ? r.getTransports() : [],
    },
    clientExtensionResults: {},
  };
}

async function after(answer) {
  say(answer.line || (answer.ok ? "done" : "refused"));
  if (answer.ok && answer.next) window.location.assign(answer.next);
}

async function signIn() {
  const start = await post("/signin/options");
  if (!start.ok) return say(start.line);
  const cred = await navigator.credentials.get({ publicKey: requestOptions(start.options) });
  await after(await post("/signin/verify", assertionJSON(cred)));
}

async function enroll() {
  const token = window.location.hash.slice(1);
  const start = await post("/enroll/options", { token });
  if (!start.ok) return say(start.line);
  const cred = await navigator.credentials.create({ publicKey: creationOptions(start.options) });
  await after(await post("/enroll/verify", registrationJSON(cred)));
}

async function decide(form) {
  const data = new FormData(form);
  const asked = {
    run: form.dataset.run, handover_no: Number(form.dataset.handover),
    decision: data.get("decision"), park: data.getAll("park"), note: data.get("note") || "",
  };
  const start = await post("/decide/options", asked);
  if (!start.ok) return say(start.line);
  say("waiting for your passkey…");
  const cred = await navigator.credentials.get({ publicKey: requestOptions(start.options) });
  const answer = await post("/decide", { fields: start.fields, assertion: assertionJSON(cred) });
  say(answer.line || (answer.ok ? "sent" : "refused"));
  if (answer.ok) form.hidden = true;
}

async function signRequest(form) {
  const data = new FormData(form);
  const asked = {
    kind: form.dataset.kind, run: form.dataset.run || "", key: form.dataset.key || "",
    supplier: form.dataset.supplier || "", reason: data.get("reason") || "",
    to: data.get("to") || "", note: data.get("note") || "",
  };
  const start = await post("/request/options", asked);
  if (!start.ok) return say(start.line);
  say("waiting for your passkey…");
  const cred = await navigator.credentials.get({ publicKey: requestOptions(start.options) });
  say("waiting for the worker…");
  const answer = await post("/request", { fields: start.fields, assertion: assertionJSON(cred) });
  say(answer.line || (answer.ok ? "sent" : "refused"));
}

function guard(fn) {
  return (...args) => fn(...args).catch((e) => say("refused: " + (e && e.message ? e.message : e)));
}

document.addEventListener("DOMContentLoaded", () => {
  const signin = document.getElementById("signin");
  if (signin) signin.addEventListener("click", guard(signIn));
  const enrollButton = document.getElementById("enroll");
  if (enrollButton) enrollButton.addEventListener("click", guard(enroll));
  const form = document.getElementById("decision");
  if (form) form.addEventListener("submit", (ev) => { ev.preventDefault(); guard(decide)(form); });
  for (const f of document.querySelectorAll("form.signed-request")) {
    f.addEventListener("submit", (ev) => { ev.preventDefault(); guard(signRequest)(f); });
  }
  for (const b of document.querySelectorAll("button[data-post]")) {
    b.addEventListener("click", guard(async () => after(await post(b.dataset.post))));
  }
});
