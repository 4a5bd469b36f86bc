/** Who an MCP server instance serves, and how it reaches the parts of the caller's service key. */
import type { AdviceMode } from "../advice.js";
import type { Caller } from "../auth/caller.js";
import type { DepsFactory } from "../tools/define-tool.js";
import type { ConfirmStates } from "./confirm.js";
import type { TaskRecords } from "./tasks/store.js";

/** What the protocol edge uses of a service key's runtime (runtime.ts makes it). */
export interface KeyParts {
  depsFactory: DepsFactory;
  tasks: TaskRecords;
  confirmStates: ConfirmStates;
}

export interface Session {
  caller: Caller;
  /** How this caller changes a setting: what next steps name (advice.ts). */
  advice: AdviceMode;
  /** The configured service's origin: the one origin the viewer may load media from. */
  mediaOrigin: string | undefined;
  /** Made on the first call that needs the service: discovery, initialize, lists ... never make them. */
  runtime(): Promise<KeyParts>;
}
