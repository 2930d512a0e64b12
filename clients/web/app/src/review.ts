// #/review/<game>: your decisions in a game, rated by the engine's search (ReviewGame).
//
// A chart of every seat's chance to win over the game (drawn here as SVG, from each rated
// decision's win_probabilities: the search's estimates from what you could see then), the
// timeline of your decisions with their labels, and, for the one selected, the board as you
// saw it at that version with the action you played and the one the search rates best.
import { errorText, type EngineClient } from "./api";
import * as board from "./board";
import { loadCatalog, type Catalog } from "./catalog";
import { h, type Child } from "./dom";
import { ReviewLabel, type DecisionReview } from "./gen/ascension/v1/engine_pb";
import type { GameView } from "./gen/ascension/v1/game_pb";
import { roundOf, seatName } from "./names";
import "./review.css";

const LABELS: Record<number, { name: string; mark: string }> = {
  [ReviewLabel.BEST]: { name: "Best", mark: "★" },
  [ReviewLabel.GOOD]: { name: "Good", mark: "✓" },
  [ReviewLabel.INACCURACY]: { name: "Inaccuracy", mark: "?!" },
  [ReviewLabel.MISTAKE]: { name: "Mistake", mark: "?" },
  [ReviewLabel.BLUNDER]: { name: "Blunder", mark: "??" },
};
const ORDER = [ReviewLabel.BEST, ReviewLabel.GOOD, ReviewLabel.INACCURACY, ReviewLabel.MISTAKE, ReviewLabel.BLUNDER];
const SVG = "http://www.w3.org/2000/svg";
// The chart's drawing area in SVG user units: as wide as the chart is drawn (one unit a CSS
// pixel: its labels keep their size on a phone), at most 900 and at least 320
const H = 280;
const M = { left: 46, right: 14, top: 14, bottom: 34 };
const HIT_RADIUS = 14; // a point's tappable circle: 28 px across

function labelOf(r: DecisionReview): { name: string; mark: string } {
  return LABELS[r.label] ?? { name: "Rated", mark: "·" };
}

function pct(p: number): string {
  return `${Math.round(p * 100)}%`;
}

/** An SVG element (the page's h() makes HTML ones). */
function s(tag: string, attrs: Record<string, string | number>, ...children: (SVGElement | string)[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

/** Offered under the final score: where a player goes to see why the game went as it did. */
export function reviewLink(gameId: string): HTMLElement {
  return h(
    "p",
    { class: "end-review" },
    h("a", { href: `#/review/${gameId}`, class: "review-link", id: "review-link" }, "Review your game"),
    ": each of your decisions rated by the engine's search, with your chances to win over the game.",
  );
}

export class ReviewScreen {
  private view!: GameView;
  private catalog!: Catalog;
  private me = -1;
  private readonly reviews: DecisionReview[] = [];
  private selected = -1;
  private total = 0;
  private done = false;
  private readonly abort = new AbortController();
  private readonly el = {
    status: h("p", { class: "status", role: "status", "aria-live": "polite" }),
    tally: h("p", { class: "review-tally" }),
    chart: h("figure", { class: "review-chart" }),
    timeline: h("ol", { class: "review-timeline", "aria-label": "Your decisions" }),
    detail: h("section", { class: "review-detail", "aria-live": "polite", "aria-label": "The selected decision" }),
  };

  constructor(
    private readonly root: HTMLElement,
    private readonly client: EngineClient,
    private readonly gameId: string,
    private readonly token: string,
  ) {}

  async start(): Promise<void> {
    this.view = await this.client.getGame({ gameId: this.gameId, token: this.token });
    this.me = this.view.seat;
    this.catalog = await loadCatalog(this.client, this.view.catalogFingerprint);
    document.title = `Review of ${this.gameId} · Ascension`;
    this.root.replaceChildren(this.skeleton());
    this.el.status.textContent = "Rating your first decision…";
    void this.stream();
  }

  stop(): void {
    this.abort.abort();
  }

  private skeleton(): HTMLElement {
    return h(
      "div",
      { class: "review" },
      h(
        "nav",
        { class: "game-nav", "aria-label": "Review" },
        h("a", { href: "#/" }, "← Lobby"),
        h("a", { href: `#/play/${this.gameId}` }, "Back to the game"),
      ),
      h("h1", {}, "Game review ", h("small", {}, `game ${this.gameId}`)),
      h(
        "p",
        { class: "review-about" },
        "Each of your decisions with a real choice, rated by a search of what you could see at the time (never the cards you could not). The chances are the search's estimates of winning after the move; the label says how much lower your move left them than the best one it found.",
      ),
      this.el.status,
      this.el.tally,
      this.el.chart,
      h("div", { class: "review-layout" }, h("div", { class: "review-col" }, h("h2", {}, "Your decisions"), this.el.timeline), this.el.detail),
    );
  }

  private async stream(): Promise<void> {
    try {
      const call = this.client.reviewGame({ gameId: this.gameId, token: this.token, budgetMs: 0, withViews: true }, { signal: this.abort.signal });
      for await (const r of call) {
        this.reviews.push(r);
        this.total = r.total;
        this.el.status.textContent = `Rated ${r.index} of ${r.total} decisions…`;
        this.el.timeline.append(this.item(this.reviews.length - 1));
        if (this.selected < 0) this.select(0);
        this.drawChart();
        this.drawTally();
      }
      this.done = true;
      this.el.status.textContent = this.reviews.length
        ? `All ${this.total} decisions rated. Select one (or a point of the chart) to see the board then.`
        : "No decision with a real choice to review yet.";
      this.drawChart();
      this.firstToLook();
    } catch (e) {
      if (this.abort.signal.aborted) return;
      this.el.status.textContent = `The review stopped: ${errorText(e)}${this.reviews.length ? " (what was rated is kept: open this page again to go on)" : ""}`;
    }
  }

  /** After the whole review: select the worst decision, the one a player wants to see first. */
  private firstToLook(): void {
    let worst = -1;
    this.reviews.forEach((r, i) => {
      const drop = r.bestWinProbability - r.winProbability;
      if (r.label >= ReviewLabel.MISTAKE && (worst < 0 || drop > this.reviews[worst].bestWinProbability - this.reviews[worst].winProbability)) worst = i;
    });
    if (worst >= 0) this.select(worst);
  }

  // -- the timeline and the selected decision --------------------------------------------

  private item(i: number): HTMLElement {
    const r = this.reviews[i];
    const l = labelOf(r);
    // "better:" only for inaccuracies and worse: a GOOD move is as good as best within the noise
    const differs = r.bestAction !== r.action && worse(r);
    return h(
      "li",
      {},
      h(
        "button",
        {
          type: "button",
          class: `review-item label-${l.name.toLowerCase()}`,
          "data-index": i,
          "data-version": String(r.version),
          "aria-pressed": "false",
          onclick: () => this.select(i),
        },
        h("span", { class: "turn" }, `Round ${roundOf(this.view, r.turn)}`),
        h("span", { class: "badge" }, h("span", { "aria-hidden": "true" }, `${l.mark} `), l.name),
        h("span", { class: "what" }, r.description, h("span", { class: "chance" }, ` ${pct(r.winProbability)}${se(r.standardError)}`)),
        r.undersearched ? h("span", { class: "undersearched" }, " (searched too little to tell)") : null,
        differs ? h("span", { class: "better" }, `better: ${r.bestDescription} (${pct(r.bestWinProbability)})`) : null,
        r.explanation ? h("span", { class: "why" }, `why: ${r.explanation}`) : null,
      ),
    );
  }

  private select(i: number): void {
    this.selected = i;
    for (const b of this.el.timeline.querySelectorAll<HTMLButtonElement>("button.review-item")) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.index) === i));
    }
    const r = this.reviews[i];
    const l = labelOf(r);
    const v = r.view;
    const parts: Child[] = [
      h("h2", {}, `Round ${roundOf(this.view, r.turn)}, version ${r.version}: `, h("span", { class: `badge label-${l.name.toLowerCase()}` }, l.name)),
      h(
        "dl",
        { class: "review-moves" },
        h("dt", {}, "You played"),
        h("dd", { class: "played" }, r.description, h("strong", {}, ` ${pct(r.winProbability)} to win after it`)),
        h("dt", {}, r.bestAction === r.action ? "The search agrees" : "The search prefers"),
        h("dd", { class: "best" }, r.bestDescription, h("strong", {}, ` ${pct(r.bestWinProbability)}${se(r.bestStandardError)}`)),
        r.explanation ? h("dt", {}, "Why") : null,
        r.explanation ? h("dd", { class: "why" }, r.explanation) : null,
      ),
    ];
    if (r.candidates.length) {
      parts.push(
        h("h3", {}, "Every option, as the search rated it"),
        h(
          "ol",
          { class: "review-chances" },
          r.candidates.map((c) =>
            h(
              "li",
              { class: c.action === r.action ? "chosen" : null },
              `${c.description}: ${pct(c.winProbability)}${se(c.standardError)} (${c.visits} visits)`,
            ),
          ),
        ),
      );
    }
    if (v) {
      const t: board.Table = { view: v, catalog: this.catalog, me: this.me, enabled: false, act: () => undefined };
      parts.push(
        h("div", { class: "review-board" }, board.header(t), board.decisionLine(t), board.ring(t), board.mySeat(t)),
        h("h3", {}, "Your options then"),
        h(
          "ol",
          { class: "review-options" },
          v.legalActions.map((a) =>
            h(
              "li",
              { class: [a.id === r.action ? "played" : "", a.id === r.bestAction ? "best" : ""].join(" ").trim() || null },
              a.description,
              a.id === r.action ? h("span", { class: "tag played" }, "played") : null,
              a.id === r.bestAction ? h("span", { class: "tag best" }, "best") : null,
            ),
          ),
        ),
      );
    }
    this.el.detail.replaceChildren(...parts.filter((p): p is Node => p instanceof Node));
    this.drawChart();
  }

  private drawTally(): void {
    const counts = new Map<number, number>();
    for (const r of this.reviews) counts.set(r.label, (counts.get(r.label) ?? 0) + 1);
    const acc = accuracy(this.reviews);
    this.el.tally.replaceChildren(
      ...ORDER.map((lbl) => h("span", { class: `badge label-${LABELS[lbl].name.toLowerCase()}` }, `${LABELS[lbl].name} ${counts.get(lbl) ?? 0}`)),
      ...(acc === null ? [] : [h("span", { class: "accuracy" }, ` Accuracy ${Math.round(acc)}%`)]),
    );
  }

  // -- the chart -------------------------------------------------------------------------

  private drawChart(): void {
    const rs = this.reviews;
    const W = Math.round(Math.min(900, Math.max(320, (this.el.chart.clientWidth || 924) - 24)));
    const players = Math.max(this.view.players, ...rs.map((r) => r.winProbabilities.length));
    const lo = rs.length ? Number(rs[0].version) : 0;
    const hi = rs.length ? Number(rs[rs.length - 1].version) : 1;
    const x = (v: bigint): number => M.left + ((Number(v) - lo) / Math.max(1, hi - lo)) * (W - M.left - M.right);
    const y = (p: number): number => M.top + (1 - p) * (H - M.top - M.bottom);
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart", "aria-labelledby": "chart-title" });
    svg.append(s("title", { id: "chart-title" }, "Each seat's chance to win over the game, as the search saw it after each of your decisions"));
    for (const p of [0, 0.25, 0.5, 0.75, 1]) {
      svg.append(
        s("line", { x1: M.left, x2: W - M.right, y1: y(p), y2: y(p), class: p === 0.5 ? "grid mid" : "grid" }),
        s("text", { x: M.left - 6, y: y(p) + 4, class: "axis", "text-anchor": "end" }, pct(p)),
      );
    }
    // round ticks: the first decision of each round shown, a label every 60 units or more
    const rounds = [...new Map(rs.map((r) => [roundOf(this.view, r.turn), r.version])).entries()];
    const step = Math.max(1, Math.ceil(rounds.length / Math.max(2, Math.floor((W - M.left - M.right) / 60))));
    rounds.forEach(([round, version], i) => {
      if (i % step) return;
      svg.append(s("text", { x: x(version), y: H - M.bottom + 16, class: "axis", "text-anchor": "middle" }, String(round)));
    });
    svg.append(s("text", { x: (M.left + W - M.right) / 2, y: H - 4, class: "axis", "text-anchor": "middle" }, "round"));
    for (let q = 0; q < players; q++) {
      const pts = rs.filter((r) => q < r.winProbabilities.length).map((r) => `${x(r.version).toFixed(1)},${y(r.winProbabilities[q]).toFixed(1)}`);
      if (pts.length) svg.append(s("polyline", { points: pts.join(" "), class: `line seat-${q}${q === this.me ? " mine" : ""}`, "data-seat": q }));
    }
    // each point's tappable circle, under every point drawn (a finger is wider than a dot)
    rs.forEach((r, i) => {
      const p = r.winProbabilities[r.seat] ?? r.winProbability;
      const hit = s("circle", { cx: x(r.version).toFixed(1), cy: y(p).toFixed(1), r: HIT_RADIUS, class: "hit", "data-index": i });
      hit.addEventListener("click", () => this.select(i));
      svg.append(hit);
    });
    // your decisions on your own line, by label (the bad ones larger)
    rs.forEach((r, i) => {
      const p = r.winProbabilities[r.seat] ?? r.winProbability;
      const l = labelOf(r);
      const dot = s(
        "circle",
        {
          cx: x(r.version).toFixed(1),
          cy: y(p).toFixed(1),
          r: r.label >= ReviewLabel.MISTAKE ? 6 : r.label === ReviewLabel.INACCURACY ? 4.5 : 3,
          class: `pt label-${l.name.toLowerCase()}${i === this.selected ? " selected" : ""}`,
          "data-index": i,
        },
        s("title", {}, `Round ${roundOf(this.view, r.turn)}: ${l.name}: ${r.description} (${pct(r.winProbability)})`),
      );
      dot.addEventListener("click", () => this.select(i));
      svg.append(dot);
    });
    const legend = h(
      "figcaption",
      {},
      Array.from({ length: players }, (_, q) => h("span", { class: `key seat-${q}` }, h("span", { class: "swatch", "aria-hidden": "true" }), seatName(this.view, q, this.me))),
      this.done ? null : h("span", { class: "pending" }, ` (rating: ${rs.length} of ${this.total || "?"})`),
    );
    this.el.chart.replaceChildren(svg, legend);
  }
}

function worse(r: DecisionReview): boolean {
  return r.label === ReviewLabel.INACCURACY || r.label === ReviewLabel.MISTAKE || r.label === ReviewLabel.BLUNDER;
}

function se(x: number): string {
  return x > 0 ? ` ±${Math.round(100 * x)}%` : "";
}

/** A seat's accuracy, 0..100, as docs/bots.md ("Game review") computes it: 100 per BEST
 * decision, else 100 * (1 - drop / 0.10), 0 from a drop of 0.10; the mean. */
export function accuracy(rs: DecisionReview[]): number | null {
  if (!rs.length) return null;
  let sum = 0;
  for (const r of rs) {
    const drop = Math.max(0, r.bestWinProbability - r.winProbability);
    sum += r.label === ReviewLabel.BEST ? 100 : 100 * Math.max(0, 1 - drop / 0.1);
  }
  return sum / rs.length;
}
