// The page: #/ the lobby, #/play/<game> your seat (token kept in this tab), #/watch/<game> a spectator,
// #/review/<game> the review of your seat's decisions in that game (and, once it is over, the
// other seats'; a decision's "Practice from here" opens a new game at #/play/<new game>, as the
// lobby opens a new game), #/join/<game>/<token> an
// invitation: the seat is taken (the token kept in this tab and removed from the address bar)
// and played at #/play/<game>. The token is in the fragment, which browsers never send to a
// server: it reaches no server log.
// Query options: ?protocol=grpc-web (default connect), ?pace=<ms> between others' moves.
import { engineClient, errorText, type Protocol } from "./api";
import { h } from "./dom";
import { DEFAULT_PACE, GameScreen, PACES } from "./game";
import { DEFAULT_CONFIG, Lobby, tokens, type PageConfig } from "./lobby";
import { ReviewScreen } from "./review";
import "./style.css";

const params = new URLSearchParams(location.search);
const protocol: Protocol = params.get("protocol") === "grpc-web" ? "grpc-web" : "connect";
const client = engineClient(protocol);
const root = document.getElementById("app")!;

function pace(): number {
  const fromUrl = params.get("pace");
  if (fromUrl !== null && /^\d+$/.test(fromUrl)) return Number(fromUrl);
  const saved = Number(localStorage.getItem("ascension.pace"));
  return PACES.some(([, ms]) => ms === saved) && localStorage.getItem("ascension.pace") !== null ? saved : DEFAULT_PACE;
}

async function loadConfig(): Promise<PageConfig> {
  try {
    const r = await fetch(new URL("config.json", location.href));
    if (r.ok) return { ...DEFAULT_CONFIG, ...((await r.json()) as Partial<PageConfig>) };
  } catch {
    // served without `ascension web` (e.g. a gateway): the defaults do
  }
  return DEFAULT_CONFIG;
}

let current: { stop(): void } | null = null;

async function route(config: PageConfig): Promise<void> {
  current?.stop();
  current = null;
  const join = /^#\/join\/([\w-]+)\/([\w-]+)$/.exec(location.hash);
  if (join) {
    tokens.set(join[1], join[2]);
    history.replaceState(null, "", `${location.pathname}${location.search}#/play/${join[1]}`);
  }
  const rv = /^#\/review\/([\w-]+)$/.exec(location.hash);
  if (rv) {
    await review(rv[1]);
    return;
  }
  const m = /^#\/(play|watch)\/([\w-]+)$/.exec(location.hash);
  if (!m) {
    const lobby = new Lobby(root, client, config);
    current = lobby;
    lobby.start();
    return;
  }
  const [, mode, gameId] = m;
  const token = mode === "play" ? tokens.get(gameId) : "";
  if (token === null) {
    root.replaceChildren(
      h("p", { class: "message", role: "alert" }, `This tab has no seat in game ${gameId}. `, h("a", { href: `#/watch/${gameId}` }, "Watch it"), " or go back to the ", h("a", { href: "#/" }, "lobby"), "."),
    );
    return;
  }
  let ms = pace();
  const screen = new GameScreen(root, client, gameId, token, {
    get pace() {
      return ms;
    },
    setPace: (v: number) => {
      ms = v;
      localStorage.setItem("ascension.pace", String(v));
    },
    about: `${protocol === "grpc-web" ? "gRPC-Web" : "Connect"} · game ${gameId}`,
  });
  current = screen;
  try {
    await screen.start();
  } catch (e) {
    root.replaceChildren(h("p", { class: "message", role: "alert" }, `Could not open game ${gameId}: ${errorText(e)} `, h("a", { href: "#/" }, "Back to the lobby")));
  }
}

/** #/review/<game>: the review of this tab's seat in that game (ReviewScreen). */
async function review(gameId: string): Promise<void> {
  const token = tokens.get(gameId);
  if (token === null) {
    root.replaceChildren(h("p", { class: "message", role: "alert" }, `This tab has no seat in game ${gameId} to review. `, h("a", { href: "#/" }, "Back to the lobby")));
    return;
  }
  const screen = new ReviewScreen(root, client, gameId, token);
  current = screen;
  try {
    await screen.start();
  } catch (e) {
    root.replaceChildren(h("p", { class: "message", role: "alert" }, `Could not review game ${gameId}: ${errorText(e)} `, h("a", { href: "#/" }, "Back to the lobby")));
  }
}

void loadConfig().then((config) => {
  window.addEventListener("hashchange", () => void route(config));
  void route(config);
});
