// `npm install` of this package from a path (or `npm ci` here) builds it: tsc into dist/.
//
// npm runs `prepare` for a package installed from a directory, but installs none of its
// devDependencies (the compiler) and, for a directory linked from outside the project, none of
// its dependencies either: the package then installs its own, from its lockfile (without their
// install scripts: none is needed to compile or to run), and compiles itself.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
const run = (cmd, args) => execFileSync(cmd, args, { cwd: here, stdio: "inherit" });

if (!existsSync(tsc) || !existsSync(join(here, "node_modules", "@connectrpc", "connect-node"))) {
  const npm = process.env.npm_execpath; // the npm running this script
  const args = ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"];
  if (npm && npm.endsWith(".js")) run(process.execPath, [npm, ...args]);
  else run(npm || "npm", args);
}
run(process.execPath, [tsc, "-p", here]);
