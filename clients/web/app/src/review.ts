// #/review/<game>: a seat's decisions in a game, rated by the engine's search (ReviewGame).
//
// A chart of every seat's chance to win over the game (drawn here as SVG, from each rated
// decision's win_probabilities: the search's estimates from what that seat could see then),
// the game's key moments, the timeline of the decisions with their labels, and, for the one
// selected, the board as the seat saw it at that version with the action played, the one the
// search rates best and a way to practise from there (PracticeFromHere). Once the game is
// over, the other seats' reviews too (a seat's token may ask for them then).
import { Code, errorText, isCode, type EngineClient } from "./api";
import * as board from "./board";
import { loadCatalog, type Catalog } from "./catalog";
import { h, sleep, type Child } from "./dom";
import { ReviewLabel, type DecisionReview } from "./gen/ascension/v1/engine_pb";
import type { GameView } from "./gen/ascension/v1/game_pb";
import { tokens } from "./lobby";
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
/** What a chance marked chance_is_guess is (docs/bots.md, "Where a chance is still a guess"). */
export const GUESS_TITLE = "Early in the game: an estimate, not yet a forecast";
// A review that was just left holds the caller's one review at a time until the searches it
// started end (REVIEW_IN_PROGRESS: its budget, more if a worker is slow): the next one is asked
// again this many times, this far apart
const BUSY_RETRIES = 20;
const BUSY_WAIT_MS = 500;

function labelOf(r: DecisionReview): { name: string; mark: string } {
  return LABELS[r.label] ?? { name: "Rated", mark: "·" };
}

function pct(p: number): string {
  return `${Math.round(p * 100)}%`;
}

/** A chance as the page shows it: "~45%" with a tooltip when it is still a guess. */
export function chance(p: number, guess: boolean, extra = ""): HTMLElement {
  return guess
    ? h("span", { class: "chance guess", title: GUESS_TITLE }, `~${pct(p)}${extra}`)
    : h("span", { class: "chance" }, `${pct(p)}${extra}`);
}

/** " (early guess)" after a chance that is still a guess. */
export function guessTag(guess: boolean): HTMLElement | null {
  return guess ? h("span", { class: "guess-tag", title: GUESS_TITLE }, " (early guess)") : null;
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

/** One seat's review, as far as it has come. */
interface SeatReview {
  seat: number;
  reviews: DecisionReview[];
  total: number;
  done: boolean;
}

export class ReviewScreen {
  private view!: GameView;
  private catalog!: Catalog;
  private me = -1;
  private shown = -1; // the seat whose review is on the page
  private readonly bySeat = new Map<number, SeatReview>();
  private selected = -1;
  private streaming: AbortController | null = null; // the review being received (one at a time)
  private stopped = false;
  private practising = false;
  private readonly el = {
    status: h("p", { class: "status", role: "status", "aria-live": "polite" }),
    seats: h("nav", { class: "review-seats", "aria-label": "Whose decisions" }),
    tally: h("p", { class: "review-tally" }),
    moments: h("section", { class: "review-moments", "aria-label": "Key moments" }),
    chart: h("figure", { class: "review-chart" }),
    title: h("h2", {}, "Your decisions"),
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
    this.show(this.me);
  }

  stop(): void {
    this.stopped = true;
    this.streaming?.abort();
  }

  private get cur(): SeatReview {
    return this.bySeat.get(this.shown)!;
  }

  /** "You" or the seat's name. */
  private who(seat: number): string {
    return seatName(this.view, seat, this.me);
  }

  /** "Your" or "B's". */
  private whose(seat: number): string {
    return seat === this.me ? "Your" : `${this.who(seat)}'s`;
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
        "Each decision with a real choice, rated by a search of what its player could see at the time (never the cards they could not). The chances are the search's estimates of winning after the move; the label says how much lower the move left them than the best one it found.",
      ),
      this.el.seats,
      this.el.status,
      this.el.tally,
      this.el.chart,
      this.el.moments,
      h("div", { class: "review-layout" }, h("div", { class: "review-col" }, this.el.title, this.el.timeline), this.el.detail),
    );
  }

  // -- whose review, and receiving it ----------------------------------------------------

  /** Show `seat`'s review: kept when complete, else asked (again: the rated ones come from the
   * store at once). The review on its way is left: the server rates one at a time per caller. */
  private show(seat: number): void {
    this.streaming?.abort();
    this.streaming = null;
    this.shown = seat;
    this.selected = -1;
    let sr = this.bySeat.get(seat);
    if (!sr?.done) {
      sr = { seat, reviews: [], total: 0, done: false };
      this.bySeat.set(seat, sr);
    }
    this.el.title.textContent = `${this.whose(seat)} decisions`;
    this.el.timeline.setAttribute("aria-label", `${this.whose(seat)} decisions`);
    this.el.timeline.replaceChildren(...sr.reviews.map((_, i) => this.item(i)));
    this.el.detail.replaceChildren();
    this.redraw();
    if (sr.done) {
      this.finished();
    } else {
      this.el.status.textContent = `Rating ${seat === this.me ? "your" : `${this.who(seat)}'s`} first decision…`;
      void this.stream(sr);
    }
  }

  private redraw(): void {
    this.drawSeats();
    this.drawTally();
    this.drawChart();
    this.drawMoments();
  }

  private async stream(sr: SeatReview): Promise<void> {
    const ctl = new AbortController();
    this.streaming = ctl;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.receive(sr, ctl.signal);
        break;
      } catch (e) {
        if (ctl.signal.aborted || this.stopped) return;
        if (attempt < BUSY_RETRIES && !sr.reviews.length && isCode(e, Code.ResourceExhausted)) {
          this.el.status.textContent = "Waiting for the engine to end the review left…";
          await sleep(BUSY_WAIT_MS);
          if (ctl.signal.aborted) return;
          continue;
        }
        this.el.status.textContent = `The review stopped: ${errorText(e)}${sr.reviews.length ? " (what was rated is kept: open this page again to go on)" : ""}`;
        return;
      }
    }
    sr.done = true;
    this.streaming = null;
    this.finished();
  }

  private async receive(sr: SeatReview, signal: AbortSignal): Promise<void> {
    const seat = sr.seat === this.me ? undefined : sr.seat;
    const call = this.client.reviewGame({ gameId: this.gameId, token: this.token, seat, budgetMs: 0, withViews: true }, { signal });
    for await (const r of call) {
      sr.reviews.push(r);
      sr.total = r.total;
      this.el.status.textContent = `Rated ${r.index} of ${r.total} decisions…`;
      this.el.timeline.append(this.item(sr.reviews.length - 1));
      if (this.selected < 0) this.select(0);
      this.redraw();
    }
  }

  /** The whole review is here: say so and select the worst decision, the one to see first. */
  private finished(): void {
    const n = this.cur.reviews.length;
    this.el.status.textContent = n
      ? `All ${this.cur.total} decisions rated. Select one (or a point of the chart) to see the board then.`
      : "No decision with a real choice to review yet.";
    this.redraw();
    let worst = -1;
    this.cur.reviews.forEach((r, i) => {
      if (r.label >= ReviewLabel.MISTAKE && (worst < 0 || drop(r) > drop(this.cur.reviews[worst]))) worst = i;
    });
    if (worst >= 0) this.select(worst);
    else if (n && this.selected < 0) this.select(0);
  }

  /** Once the game is over: one button per seat, with its accuracy once reviewed. */
  private drawSeats(): void {
    this.el.seats.hidden = !this.view.over || this.view.players < 2 || this.me < 0;
    if (this.el.seats.hidden) return;
    const order = [this.me, ...Array.from({ length: this.view.players }, (_, q) => q).filter((q) => q !== this.me)];
    this.el.seats.replaceChildren(
      ...order.map((q) => {
        const sr = this.bySeat.get(q);
        const acc = sr ? accuracy(sr.reviews) : null;
        const state = acc !== null ? `Accuracy ${Math.round(acc)}%${sr?.done ? "" : " so far"}` : sr?.done ? "nothing to rate" : sr ? "rating…" : "not reviewed yet";
        return h(
          "button",
          { type: "button", class: "seat-tab", "data-seat": q, "aria-pressed": String(q === this.shown), onclick: () => q !== this.shown && this.show(q) },
          h("span", { class: "whose" }, `${this.whose(q)} decisions`),
          h("span", { class: "accuracy" }, state),
        );
      }),
    );
  }

  // -- the key moments, the timeline and the selected decision ---------------------------

  private drawMoments(): void {
    const rs = this.cur.reviews;
    const idx = keyMoments(rs);
    this.el.moments.hidden = !idx.length;
    this.el.moments.replaceChildren(
      h("h2", {}, "Key moments", this.cur.done ? null : h("small", {}, " so far")),
      h(
        "ol",
        {},
        idx.map((i) => {
          const r = rs[i];
          const l = labelOf(r);
          const before = i > 0 ? rs[i - 1] : null;
          return h(
            "li",
            {},
            h(
              "button",
              { type: "button", class: `moment label-${l.name.toLowerCase()}`, "data-index": i, "data-version": String(r.version), onclick: () => this.selectAndShow(i) },
              h("span", { class: "turn" }, `Round ${roundOf(this.view, r.turn)}`),
              h("span", { class: "badge" }, l.name),
              h("span", { class: "what" }, r.description),
              h("span", { class: "swing" }, chance(before?.winProbability ?? 0.5, before?.chanceIsGuess ?? r.chanceIsGuess), " → ", chance(r.winProbability, r.chanceIsGuess), guessTag(r.chanceIsGuess)),
            ),
          );
        }),
      ),
    );
  }

  /** Select a decision from outside the timeline, and bring it into the timeline's view. */
  private selectAndShow(i: number): void {
    this.select(i);
    this.el.timeline.querySelector(`button.review-item[data-index="${i}"]`)?.scrollIntoView({ block: "nearest" });
  }

  private item(i: number): HTMLElement {
    const r = this.cur.reviews[i];
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
        h("span", { class: "what" }, r.description, " ", chance(r.winProbability, r.chanceIsGuess, se(r.standardError)), guessTag(r.chanceIsGuess)),
        r.undersearched ? h("span", { class: "undersearched" }, " (searched too little to tell)") : null,
        differs ? h("span", { class: "better" }, `better: ${r.bestDescription} (${r.chanceIsGuess ? "~" : ""}${pct(r.bestWinProbability)})`) : null,
        r.explanation ? h("span", { class: "why" }, `why: ${r.explanation}`) : null,
      ),
    );
  }

  private select(i: number): void {
    this.selected = i;
    for (const b of this.el.timeline.querySelectorAll<HTMLButtonElement>("button.review-item")) {
      b.setAttribute("aria-pressed", String(Number(b.dataset.index) === i));
    }
    const r = this.cur.reviews[i];
    const l = labelOf(r);
    const g = r.chanceIsGuess;
    const parts: Child[] = [
      h("h2", {}, `Round ${roundOf(this.view, r.turn)}, version ${r.version}: `, h("span", { class: `badge label-${l.name.toLowerCase()}` }, l.name)),
      h(
        "dl",
        { class: "review-moves" },
        h("dt", {}, `${this.who(r.seat)} played`),
        h("dd", { class: "played" }, r.description, h("strong", {}, " ", chance(r.winProbability, g), " to win after it"), guessTag(g)),
        h("dt", {}, r.bestAction === r.action ? "The search agrees" : "The search prefers"),
        h("dd", { class: "best" }, r.bestDescription, h("strong", {}, " ", chance(r.bestWinProbability, g, se(r.bestStandardError)))),
        r.explanation ? h("dt", {}, "Why") : null,
        r.explanation ? h("dd", { class: "why" }, r.explanation) : null,
      ),
      this.practiceArea(r),
      this.options(r),
    ];
    if (r.view) {
      const meName = r.seat === this.me ? undefined : this.who(r.seat);
      const t: board.Table = { view: r.view, catalog: this.catalog, me: r.seat, meName, enabled: false, act: () => undefined };
      parts.push(
        meName ? h("p", { class: "review-board-note" }, `The board as ${meName} saw it then.`) : null,
        h("div", { class: "review-board" }, board.header(t), board.decisionLine(t), board.ring(t), board.mySeat(t)),
        h("h3", {}, `${this.whose(r.seat)} options then`),
        h(
          "ol",
          { class: "review-options" },
          r.view.legalActions.map((a) =>
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

  /** Every option as the search rated it. */
  private options(r: DecisionReview): HTMLElement | null {
    if (!r.candidates.length) return null;
    return h(
      "div",
      {},
      h("h3", {}, "Every option, as the search rated it", guessTag(r.chanceIsGuess)),
      h(
        "ol",
        { class: "review-chances" },
        r.candidates.map((c) =>
          h("li", { class: c.action === r.action ? "chosen" : null }, `${c.description}: `, chance(c.winProbability, r.chanceIsGuess, se(c.standardError)), ` (${c.visits} visits)`),
        ),
      ),
    );
  }

  // -- practice from here ----------------------------------------------------------------

  private practiceArea(r: DecisionReview): HTMLElement {
    const message = h("p", { class: "message practice-message", role: "alert" });
    const button = h("button", { type: "button", class: "primary practice", id: "practice" }, "Practice from here");
    button.addEventListener("click", () => void this.practice(r, button, message));
    return h(
      "div",
      { class: "review-practice" },
      button,
      h("span", { class: "practice-about" }, ` A new game from this decision, ${r.seat === this.me ? "you" : `as ${this.who(r.seat)},`} against bots; the cards ${r.seat === this.me ? "you" : "they"} could not see then are dealt again.`),
      message,
    );
  }

  /** PracticeFromHere with this tab's token; the new game is opened as a new game is from the
   * lobby (its seat token kept in this tab, then #/play/<game>). */
  private async practice(r: DecisionReview, button: HTMLButtonElement, message: HTMLElement): Promise<void> {
    if (this.practising) return;
    this.practising = true;
    button.disabled = true;
    message.textContent = "Dealing…";
    try {
      const seat = r.seat === this.me ? undefined : r.seat; // (another seat: once the game is over)
      const p = await this.client.practiceFromHere({ gameId: this.gameId, token: this.token, seat, version: r.version });
      tokens.set(p.gameId, p.seatToken);
      location.hash = `#/play/${p.gameId}`;
    } catch (e) {
      message.textContent = `Could not start a practice game: ${errorText(e)}`;
    } finally {
      this.practising = false;
      button.disabled = false;
    }
  }

  private drawTally(): void {
    const counts = new Map<number, number>();
    const rs = this.cur.reviews;
    for (const r of rs) counts.set(r.label, (counts.get(r.label) ?? 0) + 1);
    const acc = accuracy(rs);
    this.el.tally.replaceChildren(
      ...ORDER.map((lbl) => h("span", { class: `badge label-${LABELS[lbl].name.toLowerCase()}` }, `${LABELS[lbl].name} ${counts.get(lbl) ?? 0}`)),
      ...(acc === null ? [] : [h("span", { class: "accuracy" }, ` Accuracy ${Math.round(acc)}%`)]),
    );
  }

  // -- the chart -------------------------------------------------------------------------

  private drawChart(): void {
    const { reviews: rs, done, total, seat: who } = this.cur;
    const W = Math.round(Math.min(900, Math.max(320, (this.el.chart.clientWidth || 924) - 24)));
    const players = Math.max(this.view.players, ...rs.map((r) => r.winProbabilities.length));
    const lo = rs.length ? Number(rs[0].version) : 0;
    const hi = rs.length ? Number(rs[rs.length - 1].version) : 1;
    const x = (v: bigint): number => M.left + ((Number(v) - lo) / Math.max(1, hi - lo)) * (W - M.left - M.right);
    const y = (p: number): number => M.top + (1 - p) * (H - M.top - M.bottom);
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart", "aria-labelledby": "chart-title" });
    svg.append(s("title", { id: "chart-title" }, `Each seat's chance to win over the game, as the search saw it after each of ${this.whose(who).toLowerCase()} decisions`));
    guessZones(rs, x, W).forEach(([x0, x1]) => {
      svg.append(s("rect", { x: x0.toFixed(1), y: M.top, width: (x1 - x0).toFixed(1), height: H - M.top - M.bottom, class: "guess-zone" }, s("title", {}, GUESS_TITLE)));
      if (x1 - x0 >= 70) svg.append(s("text", { x: ((x0 + x1) / 2).toFixed(1), y: M.top + 12, class: "axis guess-label", "text-anchor": "middle" }, "early: a guess"));
    });
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
      if (pts.length) svg.append(s("polyline", { points: pts.join(" "), class: `line seat-${q}${q === who ? " mine" : ""}`, "data-seat": q }));
    }
    // each point's tappable circle, under every point drawn (a finger is wider than a dot)
    rs.forEach((r, i) => {
      const p = r.winProbabilities[r.seat] ?? r.winProbability;
      const hit = s("circle", { cx: x(r.version).toFixed(1), cy: y(p).toFixed(1), r: HIT_RADIUS, class: "hit", "data-index": i });
      hit.addEventListener("click", () => this.select(i));
      svg.append(hit);
    });
    // the seat's decisions on its own line, by label (the bad ones larger; a guess hollow)
    rs.forEach((r, i) => {
      const p = r.winProbabilities[r.seat] ?? r.winProbability;
      const l = labelOf(r);
      const dot = s(
        "circle",
        {
          cx: x(r.version).toFixed(1),
          cy: y(p).toFixed(1),
          r: r.label >= ReviewLabel.MISTAKE ? 6 : r.label === ReviewLabel.INACCURACY ? 4.5 : 3,
          class: `pt label-${l.name.toLowerCase()}${r.chanceIsGuess ? " guess" : ""}${i === this.selected ? " selected" : ""}`,
          "data-index": i,
        },
        s("title", {}, `Round ${roundOf(this.view, r.turn)}: ${l.name}: ${r.description} (${r.chanceIsGuess ? `~${pct(r.winProbability)}, early guess` : pct(r.winProbability)})`),
      );
      dot.addEventListener("click", () => this.select(i));
      svg.append(dot);
    });
    const legend = h(
      "figcaption",
      {},
      Array.from({ length: players }, (_, q) => h("span", { class: `key seat-${q}` }, h("span", { class: "swatch", "aria-hidden": "true" }), this.who(q))),
      rs.some((r) => r.chanceIsGuess) ? h("span", { class: "key guess", title: GUESS_TITLE }, h("span", { class: "zone", "aria-hidden": "true" }), "early guess") : null,
      done ? null : h("span", { class: "pending" }, ` (rating: ${rs.length} of ${total || "?"})`),
    );
    this.el.chart.replaceChildren(svg, legend);
  }
}

/** The chart's shaded spans (x from, x to) over runs of decisions whose chance is a guess:
 * from halfway after the decision before to halfway before the one after (the chart's edges
 * at either end). */
function guessZones(rs: DecisionReview[], x: (v: bigint) => number, W: number): [number, number][] {
  const zones: [number, number][] = [];
  rs.forEach((r, i) => {
    if (!r.chanceIsGuess || rs[i - 1]?.chanceIsGuess) return;
    let j = i;
    while (rs[j + 1]?.chanceIsGuess) j++;
    const from = i > 0 ? (x(rs[i - 1].version) + x(r.version)) / 2 : M.left;
    const to = j + 1 < rs.length ? (x(rs[j].version) + x(rs[j + 1].version)) / 2 : W - M.right;
    zones.push([from, Math.max(to, from + 4)]);
  });
  return zones;
}

function drop(r: DecisionReview): number {
  return r.bestWinProbability - r.winProbability;
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

/** The key moments, as docs/bots.md ("Game review") and the SDK's key_moments choose them:
 * the `n` decisions after which the seat's chance moved most against its previous decision
 * (the first against 50%), either way; their indexes, in game order. */
export function keyMoments(rs: { winProbability: number }[], n = 3): number[] {
  const swings = rs.map((r, i) => ({ i, swing: Math.abs(r.winProbability - (i > 0 ? rs[i - 1].winProbability : 0.5)) }));
  return swings
    .sort((a, b) => b.swing - a.swing || a.i - b.i)
    .slice(0, n)
    .map((m) => m.i)
    .sort((a, b) => a - b);
}
