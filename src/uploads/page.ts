/**
 * The pages of an upload link: the form (pick, drop or paste a picture, see it, send it; without script it
 * still posts the file) and the one-line answers. Self-contained: inline style and script allowed by their
 * hashes only, nothing loaded from anywhere, no cookie; it sends to its own address, so it works under any
 * path prefix.
 */
import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}
label{display:block;border:2px dashed #888;border-radius:8px;padding:2rem 1rem;text-align:center}
img{display:block;max-width:100%;max-height:50vh;margin:1rem auto}
button{font:inherit;padding:.5rem 1.5rem;margin-top:1rem}
a{word-break:break-all}.error{color:#b00020}[hidden]{display:none}`;

const SCRIPT = `const form=document.getElementById("form"),input=document.getElementById("file"),
preview=document.getElementById("preview"),status=document.getElementById("status");
const say=(text,error)=>{status.textContent=text;status.className=error?"error":"";};
const pick=(files)=>{const file=files&&files[0];if(!file)return;
if(files!==input.files){const moved=new DataTransfer();moved.items.add(file);input.files=moved.files;}
preview.src=URL.createObjectURL(file);preview.hidden=false;
say(file.name+" ("+Math.ceil(file.size/1024)+" KB)");};
input.addEventListener("change",()=>pick(input.files));
form.addEventListener("dragover",(event)=>event.preventDefault());
form.addEventListener("drop",(event)=>{event.preventDefault();pick(event.dataTransfer.files);});
document.addEventListener("paste",(event)=>pick(event.clipboardData.files));
form.addEventListener("submit",async(event)=>{event.preventDefault();const file=input.files[0];
if(!file)return say("Choose a picture first.",true);say("Sending…");form.hidden=true;
try{const response=await fetch(location.href,{method:"PUT",body:file,headers:{accept:"application/json"}});
const answer=await response.json();
if(!answer.url){say(answer.error||answer.message,!response.ok);form.hidden=response.ok;return;}
say("Sent. Your assistant can use it now: ");const link=document.createElement("a");link.href=answer.url;
link.textContent=answer.url;link.id="url";status.append(link);}
catch{say("The picture did not reach the server. Try again.",true);form.hidden=false;}});`;

const hash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
const POLICY = [
  "default-src 'none'",
  `script-src ${hash(SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "img-src blob:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

const FORM = `<h1>Send a picture to your assistant</h1>
<p>A JPG, PNG or WebP image of at most 10 MB. This link takes one picture.</p>
<form id="form" method="post" enctype="multipart/form-data">
<label>Choose a picture, drop it here, or paste it<br>
<input id="file" type="file" name="file" accept="image/jpeg,image/png,image/webp"></label>
<img id="preview" alt="The picture to send" hidden><button type="submit">Send</button></form>
<p id="status" role="status"></p>`;

/** Every answer of a link: never cached or sniffed, and its address (the token) never sent as a Referer. */
export const NO_TRACE = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function send(res: ServerResponse, status: number, body: string, script = ""): void {
  const text = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Send a picture</title><style>${STYLE}</style></head><body><main>${body}</main>${script && `<script>${script}</script>`}</body></html>`;
  res.writeHead(status, {
    ...NO_TRACE,
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": POLICY,
  });
  res.end(text);
}

export const sendForm = (res: ServerResponse) => send(res, 200, FORM, SCRIPT);

/** A one-line answer (`url`: the hosted picture), as a page. */
export function sendNotice(res: ServerResponse, status: number, message: string, url?: string): void {
  const link = url === undefined ? "" : ` <a id="url" href="${escape(url)}">${escape(url)}</a>`;
  send(res, status, `<p${status >= 400 ? ' class="error"' : ""}>${escape(message)}${link}</p>`);
}
