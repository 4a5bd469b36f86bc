/**
 * The house's layering, checked by `npm run lint` (dependency-cruiser; docs/development.md, "Rules the build
 * checks"). Edit FLOORS when a room is added, renamed or moved; the rules below are made from it.
 *
 * A room is a folder (`generations/`) or a file (`runtime.ts`) directly under src/. A room imports only rooms on the
 * floors BELOW its own: never up, never sideways. Type-only imports count: an arrow is an arrow.
 */

/** From the entry down; the rooms of one line are one floor. */
const FLOORS = [
  ["cli.ts"],
  ["cli/"],
  ["transports/", "runtime.ts"],
  ["mcp/"],
  ["tools/"],
  ["generations/"],
  ["media/", "spend/", "uploads/", "runtime-pool.ts"],
  ["auth/", "files/", "state/"],
  ["api/", "sandbox/", "logger.ts"],
  ["config/", "ui/", "metrics.ts", "redact.ts", "advice.ts", "models.ts"],
];

/**
 * Imports that run up, each with the reason it stands and the way out. Lint stays green with them; each one is
 * a debt, not a rule: remove its line when it is paid.
 */
const KNOWN_UP_ARROWS = [
  // metrics.ts bounds the `outcome` label to the error codes (no unbounded label values), so it reads the list
  // from api/errors.ts. Way out: the list of codes moves below both (or the caller bounds the label).
  ["src/metrics.ts", "src/api/errors.ts"],
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** `generations/` -> every file under src/generations/; `runtime.ts` -> that file alone. */
const pathOf = (room) => `^src/${escape(room)}${room.endsWith("/") ? "" : "$"}`;

/** For each room below the top floor: no arrow to a room on its own floor or above. */
const layering = FLOORS.flatMap((floor, level) =>
  level === 0
    ? []
    : floor.map((room) => ({
        name: `no-up-or-sideways-from-${room.replace(/\W+$/, "").replace(/\W/g, "-")}`,
        comment:
          `src/${room} (floor ${FLOORS.length - level} of ${FLOORS.length}) imports only rooms on the floors below ` +
          "it. Move the code down, pass it in from above, or (after review) change FLOORS in .dependency-cruiser.mjs.",
        severity: "error",
        from: { path: pathOf(room) },
        to: {
          path: FLOORS.slice(0, level + 1)
            .flat()
            .filter((other) => other !== room)
            .map(pathOf),
          pathNot: KNOWN_UP_ARROWS.filter(([from]) => new RegExp(pathOf(room)).test(from)).map(
            ([, to]) => `^${escape(to)}$`,
          ),
        },
      })),
);

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  required: [
    {
      name: "room-on-no-floor",
      comment:
        "A file of src/ in a room FLOORS does not name: give the room its floor in .dependency-cruiser.mjs.",
      severity: "error",
      module: { path: "^src/", pathNot: FLOORS.flat().map(pathOf) },
      // Matched by no import: every such file is reported once.
      to: { path: "^$" },
    },
  ],
  forbidden: [
    {
      name: "no-circular",
      comment: "Files that import each other in a loop: one of them holds an idea the other should own.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...layering,
    {
      name: "api-without-mcp",
      comment: "api/ is the REST client: it knows nothing of MCP (the protocol is mcp/'s and tools/').",
      severity: "error",
      from: { path: "^src/api/" },
      to: { path: "node_modules/@modelcontextprotocol/" },
    },
    {
      name: "sandbox-stands-alone",
      comment:
        "The sandbox is the other end of the wire: it imports nothing from the client side (the service's own " +
        "models.ts and libraries only), nor MCP.",
      severity: "error",
      from: { path: "^src/sandbox/" },
      to: {
        path: ["^src/", "node_modules/@modelcontextprotocol/"],
        pathNot: ["^src/sandbox/", "^src/models\\.ts$"],
      },
    },
    {
      name: "tools-without-network",
      comment:
        "Tools validate, call the client, format: the network is api/'s and files/' (eslint forbids the fetch " +
        "global in src/tools/ too).",
      severity: "error",
      from: { path: "^src/tools/" },
      to: { path: ["node_modules/undici/", "^(node:)?(http|https|net|tls|http2)$"] },
    },
    {
      name: "no-library-internals",
      comment:
        "A library's internals by path (into node_modules, or a deep lib/, dist/ or src/ path): use what its " +
        "package exports. The next release may move them without notice.",
      severity: "error",
      from: {},
      to: { path: "node_modules/", dependencyTypes: ["local"] },
    },
    {
      name: "not-to-unresolvable",
      comment:
        "An import that resolves to nothing, or to a path a package does not export (its `exports` map): " +
        "a typo, or a library's internals.",
      severity: "error",
      from: {},
      // Scripts and benches import the build (../dist/...), which lint, running before it, may not have.
      to: { couldNotResolve: true, pathNot: "^(\\.\\./)+dist/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^dist/", "^test/interop/", "^bench/(results|\\.peers)/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      // TypeScript first: `./helpers/holding-proxy.js` names holding-proxy.ts, not the .mjs beside it.
      extensions: [".ts", ".d.ts", ".js", ".mjs", ".cjs", ".json"],
    },
    skipAnalysisNotInRules: true,
  },
};
