// One game on screen, as a seat (with its token) or as a spectator (no token).
//
// The board comes from GetGame/SubmitAction views; what happened comes from WatchGame. Updates
// of other seats are shown one at a time, `pace` milliseconds apart, each announced in words,
// and your actions are offered only once every update before your move has been shown. The
// default pace shows a bot's turn (a dozen moves or so) in about two seconds.
import { Code, errorText, isCode, type EngineClient } from "./api";
import * as board from "./board";
import { loadCatalog, type Catalog } from "./catalog";
import { h, replaceKeepingFocus, sleep, type Child } from "./dom";
import { SeatInfo_Kind, type GameUpdate, type GameView, type LegalAction, type PracticeOrigin } from "./gen/ascension/v1/game_pb";
import { ask, confirmText } from "./glossary";
import { howToPlayButton } from "./howto";
import { entryOf, type Entry } from "./log";
import { roundOf, seatName } from "./names";
import { targetOf } from "./targets";
import { chance, guessTag, reviewLink } from "./review";

export const PACES: [string, number][] = [
  ["Slow", 800],
  ["Normal", 180],
  ["Fast", 60],
  ["Instant", 0],
];
export const DEFAULT_PACE = 180;

export interface GameOptions {
  pace: number;
  setPace: (ms: number) => void;
  about: string;
}

export class GameScreen {
  private view!: GameView;
  private catalog!: Catalog;
  private me = -1;
  private readonly queue: GameUpdate[] = [];
  private readonly logged = new Set<bigint>();
  private shownVersion = 0n; // the newest update announced (or applied by us)
  private pumping = false;
  private busy = false;
  private stopped = false;
  private readonly abort = new AbortController();
  private note = ""; // said once in place of the next prompt
  private autoAnswered = -1n;
  // Hints (AnalyzePosition) for the version they were asked at; gone once the game moves on.
  private hintLines: Child[] = [];
  private hintFor = -1n;
  private hinting = false;
  private allActions = false; // a phone's docked list: every action, not only those off the table
  private present = new Set<number>(); // seats whose player is here (presence updates)
  private ticker: number | undefined; // redraws the clocks while one runs
  private practice: PracticeOrigin | undefined; // a practice game: where it started (kept from the first view)

  private readonly el = {
    header: h("div", { class: "game-top" }),
    practice: h("p", { class: "practice-origin", hidden: true }),
    clocks: h("div", { class: "clocks", role: "group", "aria-label": "Clocks and who is here" }),
    warning: h("p", { class: "time-warning", role: "alert" }),
    status: h("p", { class: "status", role: "status", "aria-live": "polite", tabindex: "-1" }),
    ring: h("div", { class: "ring-area" }),
    mine: h("div", { class: "mine-area" }),
    actions: h("section", { class: "actions", "aria-labelledby": "actions-title" }),
    others: h("section", { class: "others-area", "aria-labelledby": "others-title" }),
    log: h("ol", { class: "log", role: "log", "aria-live": "polite", "aria-label": "What happened" }),
    end: h("div", { class: "end-area" }),
  };

  constructor(
    private readonly root: HTMLElement,
    private readonly client: EngineClient,
    private readonly gameId: string,
    private readonly token: string,
    private readonly opts: GameOptions,
  ) {}

  async start(): Promise<void> {
    this.root.replaceChildren(this.skeleton());
    this.say("Loading the game…");
    this.view = await this.client.getGame({ gameId: this.gameId, token: this.token });
    this.me = this.view.seat;
    this.practice = this.view.practice;
    this.shownVersion = this.view.version;
    this.present = new Set(this.view.seatInfo.filter((s) => s.present).map((s) => s.seat));
    this.ticker = window.setInterval(() => this.renderClocks(), 500);
    this.catalog = await loadCatalog(this.client, this.view.catalogFingerprint);
    document.title = `${this.me >= 0 ? "Playing" : "Watching"} ${this.gameId} · Ascension`;
    this.render();
    this.prompt();
    document.addEventListener("keydown", this.onKey);
    void this.watch();
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
    window.clearInterval(this.ticker);
    document.removeEventListener("keydown", this.onKey);
  }

  // -- layout ---------------------------------------------------------------------------

  private skeleton(): HTMLElement {
    const pace = h(
      "select",
      {
        id: "pace",
        onchange: (ev: Event) => this.opts.setPace(Number((ev.target as HTMLSelectElement).value)),
      },
      PACES.map(([label, ms]) => h("option", { value: ms, selected: ms === this.opts.pace }, label)),
    );
    return h(
      "div",
      { class: "game" },
      h(
        "nav",
        { class: "game-nav", "aria-label": "Game" },
        h("a", { href: "#/" }, "← Lobby"),
        h("label", { for: "pace" }, "Others' moves: "),
        pace,
        howToPlayButton(() => this.view?.sets ?? "both"),
        h("span", { class: "about" }, this.opts.about),
      ),
      this.el.header,
      this.el.practice,
      this.el.clocks,
      this.el.warning,
      this.el.status,
      h(
        "div",
        { class: "layout" },
        h("div", { class: "main-col" }, this.el.ring, this.el.end, this.el.mine),
        h(
          "div",
          { class: "side-col" },
          this.el.actions,
          this.el.others,
          h(
            "section",
            { class: "log-area", "aria-labelledby": "log-title" },
            h("h2", { id: "log-title" }, "What happened"),
            this.el.log,
          ),
        ),
      ),
    );
  }

  private canAct(): boolean {
    return (
      this.me >= 0 &&
      !this.busy &&
      !this.pumping &&
      this.queue.length === 0 &&
      !this.view.over &&
      this.view.toMove === this.me &&
      this.view.legalActions.length > 0
    );
  }

  private render(): void {
    const hadFocus = this.root.contains(document.activeElement) && document.activeElement !== document.body;
    const t: board.Table = {
      view: this.view,
      catalog: this.catalog,
      me: this.me,
      enabled: this.canAct(),
      act: (a) => void this.submit(a),
    };
    replaceKeepingFocus(this.el.header, board.header(t), board.decisionLine(t));
    this.renderPractice();
    this.renderClocks();
    replaceKeepingFocus(this.el.ring, board.ring(t));
    replaceKeepingFocus(this.el.mine, board.mySeat(t));
    replaceKeepingFocus(this.el.others, h("h2", { id: "others-title" }, this.me >= 0 ? "Opponents" : "Players"), board.otherSeats(t));
    replaceKeepingFocus(this.el.end, this.view.over ? [board.scores(t), this.me >= 0 ? reviewLink(this.gameId) : null] : null);
    const plays = t.enabled ? this.plays() : [];
    const playAll =
      plays.length > 1
        ? h("button", { type: "button", class: "act play-all", "data-key": "play-all", "aria-keyshortcuts": "A", onclick: () => void this.playAll() }, h("kbd", { "aria-hidden": "true" }, "A"), "Play all your cards")
        : null;
    this.el.actions.hidden = this.me < 0 || this.view.over; // over: the status and the score say it
    this.el.actions.classList.toggle("all", this.allActions);
    const onTable = t.enabled ? this.view.legalActions.filter((a) => targetOf(a)).length : 0;
    // On a phone the docked list holds what the table does not offer (End your turn, a choice's
    // answers...): every card and space has its actions on it. This shows the whole list.
    const showAll = onTable
      ? h(
          "button",
          { type: "button", class: "show-all", "data-key": "show-all", "aria-expanded": String(this.allActions), onclick: () => this.toggleAll() },
          this.allActions ? "Fewer" : `All ${this.view.legalActions.length}`,
        )
      : null;
    replaceKeepingFocus(
      this.el.actions,
      h("h2", { id: "actions-title" }, this.view.over ? "Game over" : t.enabled ? "Your move" : "Your actions"),
      showAll,
      t.enabled ? board.actionList(t, playAll) : h("p", { class: "waiting" }, this.waitingWords()),
      t.enabled ? this.hintArea() : null,
    );
    if (hadFocus && (!this.root.contains(document.activeElement) || document.activeElement === document.body)) {
      const first = this.el.actions.querySelector<HTMLElement>("button.act");
      (first ?? this.el.status).focus();
    }
  }

  /** Each seat's clock (the running one counting down against this machine's time) and whether
   * its player is here; a warning when your own time runs short. */
  private renderClocks(): void {
    const v = this.view;
    if (!v) return;
    const c = v.clock;
    const now = Date.now();
    const left = (seat: number): number | null => {
      if (!c) return null;
      if (c.seat === seat && c.deadlineUnixMs > 0n) return Math.max(0, Number(c.deadlineUnixMs) - now);
      return seat < c.bankMs.length ? Number(c.turnMs[seat] + c.bankMs[seat]) : null;
    };
    const humans = v.seatInfo.filter((s) => s.kind !== SeatInfo_Kind.AI);
    if (!c && humans.length < 2) {
      this.el.clocks.hidden = true;
      return;
    }
    this.el.clocks.hidden = false;
    const items = v.seatInfo.map((s) => {
      const ms = left(s.seat);
      const running = !!c && c.seat === s.seat && !v.over;
      const human = s.kind !== SeatInfo_Kind.AI;
      const here = human ? (this.present.has(s.seat) ? "here" : "away") : "bot";
      return h(
        "span",
        { class: `clock seat-${s.seat}${running ? " running" : ""}${running && ms !== null && ms < 10000 ? " short" : ""}`, "data-seat": s.seat },
        h("span", { class: `presence ${here}`, title: here }, human ? (here === "here" ? "●" : "○") : ""),
        ` ${seatName(v, s.seat, this.me)}`,
        s.resigned ? " (resigned)" : "",
        ms === null || s.kind === SeatInfo_Kind.AI ? "" : h("span", { class: "time" }, ` ${clockText(ms)}`),
      );
    });
    replaceKeepingFocus(this.el.clocks, ...items);
    const mine = this.me >= 0 && c && c.seat === this.me && !v.over ? left(this.me) : null;
    const text = mine !== null && mine < 10000 ? `Your time is running out: ${Math.ceil(mine / 1000)} s left, then the engine plays for you.` : "";
    if (this.el.warning.textContent !== text) this.el.warning.textContent = text;
  }

  /** A practice game says where it started, with a link to that game's review. */
  private renderPractice(): void {
    const p = this.practice;
    this.el.practice.hidden = !p;
    if (!p) return;
    this.el.practice.replaceChildren(
      `Practice from turn ${p.turn} (round ${roundOf(this.view, p.turn)}) of game `,
      h("a", { href: `#/review/${p.gameId}`, class: "practice-review", title: `The review of game ${p.gameId}` }, p.gameId),
      h("span", { class: "dealt" }, ": the cards you could not see then were dealt again."),
    );
  }

  private toggleAll(): void {
    this.allActions = !this.allActions;
    this.render();
  }

  /** The Hints button (key H) and, once asked, the three best actions with their numbers. */
  private hintArea(): HTMLElement {
    const fresh = this.hintFor === this.view.version;
    return h(
      "div",
      { class: "hints" },
      h(
        "button",
        { type: "button", class: "hint", "aria-keyshortcuts": "H", disabled: this.hinting, onclick: () => void this.hint() },
        h("kbd", { "aria-hidden": "true" }, "H"),
        this.hinting ? "Looking for good moves…" : "Hints",
      ),
      fresh && this.hintLines.length ? h("ul", { class: "hint-list", "aria-live": "polite", "aria-label": "Hints" }, this.hintLines.map((line) => h("li", {}, line))) : null,
    );
  }

  private async hint(): Promise<void> {
    if (!this.canAct() || this.hinting) return;
    const version = this.view.version;
    this.hinting = true;
    this.render();
    let lines: Child[];
    try {
      const a = await this.client.analyzePosition({ gameId: this.gameId, token: this.token, budgetMs: 1000 });
      const numbers = new Map(this.view.legalActions.map((x, i) => [x.id, i + 1]));
      lines = a.candidates
        .filter((c) => a.version === this.view.version && numbers.has(c.action))
        .slice(0, 3)
        .map((c) => [h("kbd", {}, String(numbers.get(c.action))), ` ${c.description}: `, h("strong", {}, chance(c.winProbability, a.chanceIsGuess), " to win"), guessTag(a.chanceIsGuess)]);
    } catch (e) {
      lines = [`No hints now: ${errorText(e)}`];
    } finally {
      this.hinting = false;
    }
    this.hintLines = lines;
    this.hintFor = version;
    this.render();
  }

  private waitingWords(): string {
    if (this.view.over) return "The game is over.";
    if (this.busy) return "Sending your move…";
    if (this.view.toMove === this.me) return "Catching up with the table…";
    return `${seatName(this.view, this.view.toMove, this.me)} to move…`;
  }

  private say(text: string, seat = -2): void {
    this.el.status.textContent = text;
    this.el.status.className = `status${seat >= -1 ? ` seat-${seat}` : ""}`;
  }

  private prompt(): void {
    if (this.autoAnswer()) return;
    const note = this.note;
    this.note = "";
    if (note && !this.view.over) {
      this.say(note);
      return;
    }
    if (this.view.over) {
      // who won is the heading of the final score, just below
      this.say("The game is over: the final score is below.");
    } else if (this.canAct()) {
      // a choice to make is said by the line above the table; this says how to answer it
      const d = this.view.board?.decision;
      this.say(d ? "Pick your answer among your actions (keys 1–9)." : "Your move: pick an action (keys 1–9, A plays all, H for hints).");
    } else if (!this.pumping && this.queue.length === 0) {
      this.say(`${seatName(this.view, this.view.toMove, this.me)} is thinking…`, this.view.toMove);
    }
  }

  // -- the log --------------------------------------------------------------------------

  private record(u: GameUpdate): void {
    if (this.logged.has(u.version)) return;
    this.logged.add(u.version);
    const e: Entry = entryOf(u, this.view, this.me);
    const items: HTMLElement[] = [];
    if (e.turnStart && !u.over) items.push(h("li", { class: "turn-start" }, e.turnStart));
    items.unshift(
      h(
        "li",
        { class: `entry seat-${e.seat}`, "data-version": String(u.version) },
        e.lines.join(" · "),
        u.timeout ? h("span", { class: "timeout" }, ` (${u.timeout})`) : null,
      ),
    );
    // The log is in version order even if an update arrives late (our own move's reply first).
    const after = [...this.el.log.querySelectorAll<HTMLElement>("li.entry")].find((li) => BigInt(li.dataset.version ?? "0") > u.version);
    for (const item of items) this.el.log.insertBefore(item, after ?? null);
    this.el.log.scrollTop = this.el.log.scrollHeight;
  }

  // -- updates from WatchGame -----------------------------------------------------------

  private async watch(): Promise<void> {
    let after = 0n;
    let afterCommit = "";
    let failures = 0;
    while (!this.stopped) {
      try {
        // With the seat's token the player counts as here while the page is open.
        const request = { gameId: this.gameId, afterVersion: after, afterCommitId: afterCommit, token: this.token, withPresence: true };
        for await (const u of this.client.watchGame(request, { signal: this.abort.signal })) {
          if (u.presenceOnly) {
            this.present = new Set(u.presentSeats);
            this.renderClocks();
            continue;
          }
          after = u.version;
          afterCommit = u.commitId;
          failures = 0;
          this.queue.push(u);
          void this.pump();
        }
        if (this.view.over || this.queue.some((u) => u.over)) return;
      } catch (e) {
        if (this.stopped) return;
        if (isCode(e, Code.NotFound)) {
          this.say(`This game is gone: ${errorText(e)}`);
          return;
        }
        if (isCode(e, Code.DataLoss, Code.OutOfRange)) {
          // The history we hold is gone (a store rollback) or no longer kept: read the game
          // again and follow it from its current version.
          await this.resync(isCode(e, Code.DataLoss));
          after = this.view.version;
          afterCommit = this.view.commitId;
          continue;
        }
        failures += 1;
        this.say(`Connection to the engine lost (${errorText(e)}); trying again…`);
      }
      if (this.view.over) return;
      await sleep(Math.min(250 * 2 ** failures, 5000));
    }
  }

  private async resync(lost: boolean): Promise<void> {
    this.queue.length = 0;
    await this.refresh();
    if (lost) {
      // Moves after the store's version never happened as far as the game is concerned.
      for (const li of this.el.log.querySelectorAll<HTMLElement>("li.entry")) {
        if (BigInt(li.dataset.version ?? "0") > this.view.version) li.remove();
      }
      for (const v of [...this.logged]) if (v > this.view.version) this.logged.delete(v);
      this.el.log.append(h("li", { class: "turn-start" }, `The engine lost the moves after version ${this.view.version}; the game goes on from there.`));
    } else {
      // The engine keeps a short window of recent moves: older ones are not shown.
      this.el.log.append(h("li", { class: "turn-start" }, `Moves before version ${this.view.version + 1n} are no longer kept by the engine; the log goes on from here.`));
    }
    this.shownVersion = this.view.version;
    this.render();
    this.prompt();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length && !this.stopped) {
        const u = this.queue.shift()!;
        this.record(u);
        if (u.version <= this.shownVersion) continue; // history, or our own move already shown
        this.shownVersion = u.version;
        const theirs = u.seat !== this.me;
        if (theirs) {
          const e = entryOf(u, this.view, this.me);
          this.say(e.lines.join(" · "), u.seat);
        }
        if (this.view.version < u.version) await this.refresh();
        this.render();
        if (theirs && u.seat >= 0 && this.opts.pace > 0 && !u.over) await sleep(this.opts.pace);
      }
    } finally {
      this.pumping = false;
    }
    this.render();
    this.prompt();
  }

  private async refresh(): Promise<void> {
    try {
      this.view = await this.client.getGame({ gameId: this.gameId, token: this.token });
    } catch (e) {
      this.say(`Could not load the game: ${errorText(e)}`);
    }
  }

  // -- your moves -----------------------------------------------------------------------

  /**
   * A choice whose only answer is to decline is answered at once, saying so (the victim of a
   * Raid is asked whenever the table cannot tell whether they can prevent it, also when they
   * cannot: being asked reveals nothing). The answer is still the server's listed action.
   */
  private autoAnswer(): boolean {
    const only = this.view.legalActions;
    if (!this.canAct() || only.length !== 1 || only[0].kind !== "skip") return false;
    if (this.autoAnswered === this.view.version) return false; // once: a refusal is shown, not retried
    this.autoAnswered = this.view.version;
    this.note = `${only[0].description}: your only choice, answered for you.`;
    void this.submit(only[0]);
    return true;
  }

  private plays(): LegalAction[] {
    return this.view.legalActions.filter((a) => a.kind === "play");
  }

  private async submit(a: LegalAction): Promise<void> {
    if (!this.canAct() || !this.view.legalActions.some((x) => x.id === a.id)) return;
    this.busy = true;
    const question = this.askFirst(a);
    if (question) {
      const yes = await ask(question, a.kind === "move" ? "Sail" : "End my turn");
      if (!yes) {
        this.busy = false;
        this.say("Not done.");
        return;
      }
    }
    this.render();
    let ok = false;
    try {
      ok = await this.send(a);
    } finally {
      this.busy = false;
    }
    this.after(ok);
  }

  /**
   * The question to ask before a move a newcomer may not mean, in the terminal's words
   * (clients/glossary.json): sailing (once a turn), or ending a turn with something left to
   * play, spend or use, saying where it goes. Empty: no question.
   */
  private askFirst(a: LegalAction): string {
    if (a.kind === "move") return confirmText("sail", { move: a.description, where: "" });
    if (a.kind !== "end_turn") return "";
    const kinds = new Set(this.view.legalActions.map((x) => x.kind));
    // the cards in hand (a play action stands for every copy of a card)
    const mine = this.view.board?.seats.find((s) => s.seat === this.me);
    const plays = this.plays().length ? (mine?.hand.length ?? this.plays().length) : 0;
    const runes = kinds.has("acquire") ? (this.view.board?.runes ?? 0) : 0;
    const power = kinds.has("defeat") ? (this.view.board?.power ?? 0) : 0;
    const ability = kinds.has("use") || kinds.has("flip_coins");
    const left: string[] = [];
    const where: string[] = [];
    if (plays) {
      left.push(confirmText("left_play", { n: plays }).replace("(s)", plays > 1 ? "s" : ""));
      where.push(confirmText("where_cards"));
    }
    if (runes) left.push(confirmText("left_runes", { n: runes }));
    if (power) left.push(confirmText("left_power", { n: power }));
    if (runes && power) where.push(confirmText("where_runes_power"));
    else if (runes || power) where.push(confirmText(runes ? "where_runes" : "where_power"));
    if (ability) {
      left.push(confirmText("left_ability"));
      where.push(confirmText("where_ability"));
    }
    if (!left.length) return "";
    return confirmText("end_turn", { left: joined(left), where: joined(where) });
  }

  /** Every card in hand, one play after another (stopping at any choice to make). */
  private async playAll(): Promise<void> {
    if (!this.canAct()) return;
    this.busy = true;
    this.render();
    let ok = true;
    try {
      for (let i = 0; i < 40 && ok; i++) {
        const play = this.plays()[0];
        if (!play || this.view.over || this.view.toMove !== this.me || this.view.board?.decision) break;
        ok = await this.send(play);
      }
    } finally {
      this.busy = false;
    }
    this.after(ok);
  }

  private async send(a: LegalAction): Promise<boolean> {
    try {
      const r = await this.client.submitAction({
        gameId: this.gameId,
        token: this.token,
        expectedVersion: this.view.version,
        expectedCommitId: this.view.commitId, // only on the very state shown
        action: a.id,
      });
      if (r.update) {
        this.record(r.update);
        if (r.update.version > this.shownVersion) this.shownVersion = r.update.version;
      }
      if (r.view) this.view = r.view;
      return true;
    } catch (e) {
      this.say(`Not done: ${errorText(e)}`);
      if (isCode(e, Code.FailedPrecondition, Code.Aborted)) await this.refresh();
      return false;
    }
  }

  private after(ok: boolean): void {
    this.render();
    if (ok) this.prompt();
    void this.pump();
  }

  private readonly onKey = (ev: KeyboardEvent): void => {
    const t = ev.target as HTMLElement | null;
    if (ev.altKey || ev.ctrlKey || ev.metaKey || (t && /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName))) return;
    if (!this.canAct()) return;
    if (/^[1-9]$/.test(ev.key)) {
      const a = this.view.legalActions[Number(ev.key) - 1];
      if (a) {
        ev.preventDefault();
        void this.submit(a);
      }
    } else if (ev.key === "a" || ev.key === "A") {
      ev.preventDefault();
      void this.playAll();
    } else if (ev.key === "h" || ev.key === "H") {
      ev.preventDefault();
      void this.hint();
    }
  };
}

/** "a, b and c". */
function joined(parts: string[]): string {
  return parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

/** m:ss (h:mm:ss past an hour) of a time left in milliseconds. */
export function clockText(ms: number): string {
  const s = Math.ceil(ms / 1000);
  const two = (n: number): string => String(n).padStart(2, "0");
  return s >= 3600 ? `${Math.floor(s / 3600)}:${two(Math.floor(s / 60) % 60)}:${two(s % 60)}` : `${Math.floor(s / 60)}:${two(s % 60)}`;
}
