/**
 * Plane geometry for the tests that check the console's drawing: whether a line segment meets a box, and
 * whether two boxes overlap. Used on the layout's own numbers and on what Chromium drew.
 */

export interface Point {
  x: number;
  y: number;
}

/** An axis-aligned box, corners (x1, y1) top left and (x2, y2) bottom right. */
export interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The box shrunk by `by` on every side (a box that only touches another does not overlap it). */
export function inset(box: Box, by: number): Box {
  return { x1: box.x1 + by, y1: box.y1 + by, x2: box.x2 - by, y2: box.y2 - by };
}

/** Whether the segment from p to q has a point inside the box (Liang–Barsky clipping). */
export function segmentMeetsBox(p: Point, q: Point, box: Box): boolean {
  let [t0, t1] = [0, 1];
  const [dx, dy] = [q.x - p.x, q.y - p.y];
  const sides: [number, number][] = [
    [-dx, p.x - box.x1],
    [dx, box.x2 - p.x],
    [-dy, p.y - box.y1],
    [dy, box.y2 - p.y],
  ];
  for (const [step, room] of sides) {
    if (step === 0) {
      if (room < 0) return false;
      continue;
    }
    const t = room / step;
    if (step < 0) t0 = Math.max(t0, t);
    else t1 = Math.min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
}

/** Whether a polyline has a point inside the box. */
export function lineMeetsBox(points: readonly Point[], box: Box): boolean {
  return points.slice(1).some((q, i) => segmentMeetsBox(points[i] as Point, q, box));
}

export function boxesOverlap(a: Box, b: Box): boolean {
  return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
}
