// Builds the console into dist/: one script, one style sheet and the page,
// embedded in the saucer binary (package console). `npm run build`.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

mkdirSync("dist", { recursive: true });
await build({
  entryPoints: ["src/main.tsx"],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outfile: "dist/app.js",
  legalComments: "none",
  logLevel: "warning",
});
await build({
  entryPoints: ["src/style.css"],
  bundle: true,
  minify: true,
  outfile: "dist/app.css",
  logLevel: "warning",
});
copyFileSync("src/index.html", "dist/index.html");
