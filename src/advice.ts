/**
 * A next step that asks the user to change a setting names what that user can change in the way the server
 * runs (a client variable, the MCPB form, their own header, nothing but the operator, a flag). The layers
 * write a token (`fix("api_key")`), and the edge renders it once for the mode of the call (`renderAdvice`).
 */

import path from "node:path";

export type Setting =
  "api_key" | "base_url" | "allowed_dirs" | "output_dir" | "previews" | "spend_limits" | "state_dir";

export type AdviceMode = "stdio" | "mcpb" | "http-key" | "shared" | "cli";

const TOKEN = /\{\{fix:(api_key|base_url|allowed_dirs|output_dir|previews|spend_limits|state_dir)\}\}/g;

/** A placeholder for "what this user does to change `setting`", rendered by `renderAdvice`. */
export function fix(setting: Setting): string {
  return `{{fix:${setting}}}`;
}

const FORM = "Claude Desktop's Settings > Extensions > Video & image generation";
const OPERATOR =
  "tell whoever runs this server (its operator) that it must be fixed on the server; nothing in the user's own client configuration changes it";

/** Over HTTP every setting but the caller's own key is the operator's. */
const HTTP_KEY: Record<Setting, string> = {
  api_key:
    "check the service API key their MCP client sends to this server as 'Authorization: Bearer <key>' (in the client's settings for this server): the service refused it (mistyped or revoked; a new key comes from the service's API keys page). You cannot change it yourself",
  base_url: OPERATOR,
  allowed_dirs: `${OPERATOR} (this shared server reads local files only from folders on its own machine that the operator allowed; pass an http(s) image URL or data_base64 instead)`,
  output_dir: OPERATOR,
  previews: OPERATOR,
  spend_limits: `${OPERATOR}: the spend limits (GENERATION_MAX_CREDITS_PER_CALL, GENERATION_DAILY_CREDITS, GENERATION_CONFIRM_ABOVE_CREDITS) are the server's, if they want it allowed`,
  state_dir: `${OPERATOR}: its state folder (GENERATION_STATE_DIR) must be writable and have free space`,
};

const PHRASES: Record<AdviceMode, Record<Setting, string>> = {
  stdio: {
    api_key:
      "check GENERATION_API_KEY in this server's entry of their MCP client configuration: the service refused it (missing, mistyped or revoked; a new key comes from the service's API keys page). You cannot change it yourself; the client must restart the server after the change",
    base_url:
      "fix GENERATION_BASE_URL in this server's entry of their MCP client configuration: it must be the service address up to and including /api/v1 (for example https://<service>/api/v1). You cannot change it yourself",
    allowed_dirs: `add the image's folder to GENERATION_ALLOWED_DIRS in this server's entry of their MCP client configuration (separate folders with "${path.delimiter}"; the server reads it only when it starts, so the client must restart it)`,
    output_dir:
      "check that GENERATION_OUTPUT_DIR in this server's entry of their MCP client configuration names a writable folder with free space",
    previews: "set GENERATION_PREVIEWS=on in this server's entry of their MCP client configuration",
    spend_limits:
      "raise GENERATION_MAX_CREDITS_PER_CALL or GENERATION_DAILY_CREDITS (or GENERATION_CONFIRM_ABOVE_CREDITS, for a client that cannot ask them to confirm) in this server's entry of their MCP client configuration, if they want to allow it. You cannot change it yourself; the client must restart the server after the change",
    state_dir:
      "free space in that folder (its disk is full or it cannot be written), or point GENERATION_STATE_DIR in this server's entry of their MCP client configuration at a writable folder with free space. You cannot change it yourself; the client must restart the server after the change",
  },
  mcpb: {
    api_key: `check the API key in ${FORM}: the service refused it (missing, mistyped or revoked; a new key comes from the service's API keys page). You cannot change it yourself`,
    base_url: `fix the Service address in ${FORM}: it must be the service address up to and including /api/v1 (for example https://<service>/api/v1). You cannot change it yourself`,
    allowed_dirs: `add the image's folder to Upload folders in ${FORM}`,
    output_dir: `choose a writable folder with free space as the Output folder in ${FORM}`,
    previews: "turn previews back on (the bundle has them on unless GENERATION_PREVIEWS=off is set)",
    spend_limits: `raise Max credits per call or Daily credit limit in ${FORM} (or Confirm cost above, for a client that cannot ask them to confirm; an empty field means no limit), if they want to allow it. You cannot change it yourself`,
    state_dir:
      "free space in that folder (its disk is full or it cannot be written; the extension keeps its state there). You cannot change it yourself",
  },
  cli: {
    api_key:
      "check GENERATION_API_KEY: the service refused it (missing, mistyped or revoked; a new key comes from the service's API keys page). `generation-mcp check` tests it",
    base_url:
      "fix GENERATION_BASE_URL (or --base-url): the service address up to and including /api/v1, e.g. https://<service>/api/v1. `generation-mcp check` tests it",
    allowed_dirs: `add the image's folder to GENERATION_ALLOWED_DIRS (or --allowed-dirs; folders separated by "${path.delimiter}")`,
    output_dir: "save into a writable folder with free space (--out, or GENERATION_OUTPUT_DIR)",
    previews: "set GENERATION_PREVIEWS=on (or --previews on)",
    spend_limits:
      "accept the cost with --yes, or raise GENERATION_MAX_CREDITS_PER_CALL or GENERATION_DAILY_CREDITS (or their flags)",
    state_dir:
      "free space in that folder, or point GENERATION_STATE_DIR (or --state-dir) at a writable folder with free space",
  },
  "http-key": HTTP_KEY,
  shared: {
    ...HTTP_KEY,
    api_key: `${OPERATOR}: the service refused the API key this server holds`,
    spend_limits: `${OPERATOR}: the spend limits (GENERATION_MAX_CREDITS_PER_CALL, GENERATION_DAILY_CREDITS per person, GENERATION_CONFIRM_ABOVE_CREDITS) are the server's, if they want it allowed`,
  },
};

/** The mode of a call: over HTTP a caller with a scope shares the server's key, one without has its own. */
export function adviceModeFor(
  config: { http: unknown; settingsForm: "env" | "mcpb" },
  scope: string | undefined,
): AdviceMode {
  if (config.http !== undefined) return scope === undefined ? "http-key" : "shared";
  return config.settingsForm === "mcpb" ? "mcpb" : "stdio";
}

/** The text with every setting token written for `mode`. */
export function renderAdvice(text: string, mode: AdviceMode): string {
  return text.replace(TOKEN, (_token, setting: Setting) => PHRASES[mode][setting]);
}
