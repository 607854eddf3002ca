/**
 * A short two-note chime, synthesized (no audio file to fetch, nothing from another origin). Browsers
 * allow sound only after the user interacted with the page; before that this is silently skipped.
 */
let context: AudioContext | undefined;

/** How many chimes played (tests read it: headless browsers have no speakers). */
export let chimes = 0;

export function chime(): void {
  try {
    context ??= new AudioContext();
    const now = context.currentTime;
    for (const [i, freq] of [660, 880].entries()) {
      const osc = context.createOscillator();
      const gain = context.createGain();
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, now + i * 0.15);
      gain.gain.exponentialRampToValueAtTime(0.2, now + i * 0.15 + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + i * 0.15 + 0.3);
      osc.connect(gain).connect(context.destination);
      osc.start(now + i * 0.15);
      osc.stop(now + i * 0.15 + 0.32);
    }
    chimes++;
    document.documentElement.dataset.chimes = String(chimes);
  } catch {
    // No audio here: nothing to do.
  }
}
