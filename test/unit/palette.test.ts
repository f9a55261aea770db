/**
 * The graph's edge colours: "changed by the plan step" stays apart from every other edge colour for people
 * with the common colour-vision deficiencies, measured as CIE76 ΔE after simulating each deficiency with the
 * matrices of Machado, Oliveira and Fernandes (2009, severity 1), and the legend shows the graph's colours.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { EdgeColour } from '../../src/console/palette.ts';

type Matrix = readonly [readonly number[], readonly number[], readonly number[]];
const deficiencies = {
  none: [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ],
  protanopia: [
    [0.152286, 1.052583, -0.204868],
    [0.114503, 0.786281, 0.099216],
    [-0.003882, -0.048116, 1.051998],
  ],
  deuteranopia: [
    [0.367322, 0.860646, -0.227968],
    [0.280085, 0.672501, 0.047413],
    [-0.01182, 0.04294, 0.968881],
  ],
  tritanopia: [
    [1.255528, -0.076749, -0.178779],
    [-0.078411, 0.930809, 0.147602],
    [0.004733, 0.691367, 0.3039],
  ],
} satisfies Record<string, Matrix>;

/** sRGB `#rrggbb` to linear RGB. */
function linear(hex: string): number[] {
  return [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
}

/** Linear RGB (D65) to CIELAB. */
function lab([r = 0, g = 0, b = 0]: number[]): number[] {
  const f = (t: number) => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116);
  const x = f((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047);
  const y = f(0.2126 * r + 0.7152 * g + 0.0722 * b);
  const z = f((0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883);
  return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
}

function seen(hex: string, m: Matrix): number[] {
  const c = linear(hex);
  return m.map((row) =>
    Math.min(
      1,
      Math.max(
        0,
        row.reduce((n, k, i) => n + k * (c[i] ?? 0), 0),
      ),
    ),
  );
}

function deltaE(a: string, b: string, m: Matrix): number {
  const [p, q] = [lab(seen(a, m)), lab(seen(b, m))];
  return Math.hypot(...p.map((v, i) => v - (q[i] ?? 0)));
}

test('"changed by the plan step" is told from every other edge colour under each deficiency (ΔE ≥ 20)', () => {
  for (const [name, colour] of Object.entries(EdgeColour)) {
    if (name === 'changed') continue;
    for (const [deficiency, m] of Object.entries(deficiencies)) {
      const d = deltaE(EdgeColour.changed, colour, m);
      assert.ok(d >= 20, `changed against ${name} with ${deficiency}: ΔE ${d.toFixed(1)}`);
    }
  }
  // The measure tells a confusable pair: the orange-red the plan used before, against denied red.
  assert.ok(deltaE('#e4572e', EdgeColour.denied, deficiencies.deuteranopia) < 20);
});

test("the legend's lines have the graph's colours", () => {
  const css = readFileSync(new URL('../../../src/ui/console.css', import.meta.url), 'utf8');
  const legend: Record<string, string> = {
    plain: '.line::before',
    passthrough: '.line.passthrough::before',
    denied: '.line.denied::before',
    someDenied: '.line.some-denied::before',
    changed: '.line.changed::before',
  };
  for (const [name, selector] of Object.entries(legend)) {
    const at = css.indexOf(`${selector} {`);
    assert.ok(at >= 0, `console.css has ${selector}`);
    const block = css.slice(at, css.indexOf('}', at));
    assert.ok(
      block.includes(EdgeColour[name as keyof typeof EdgeColour]),
      `${selector} is drawn in ${EdgeColour[name as keyof typeof EdgeColour]}: ${block}`,
    );
  }
});
