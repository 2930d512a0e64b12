// Builds the page into ../static (shipped in the Python package; committed, checked for drift).
import { defineConfig } from "vite";

export default defineConfig({
  // Relative asset paths: the page works wherever it is mounted (ascension web, a gateway path).
  base: "./",
  build: {
    outDir: "../static",
    emptyOutDir: true,
    target: "es2022",
    // No source maps: the shipped bundle stays small; sources are in clients/web/app/src.
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    // `npm run dev` next to `ascension web --port 8080`: the API calls go to it.
    proxy: { "/ascension.v1.Engine": "http://127.0.0.1:8080", "/config.json": "http://127.0.0.1:8080" },
  },
});
