/**
 * A squarified treemap (Bruls, Huizing and van Wijk, 2000): rectangles with areas in proportion
 * to the values, laid out in rows whose aspect ratios stay close to 1.
 */

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Placed<T> {
  item: T;
  rect: Rect;
}

/** The worst aspect ratio of a row whose areas run from `max` to `min` and sum to `sum`, laid along a side of `side`. */
function worstRatio(max: number, min: number, sum: number, side: number): number {
  const sideSquared = side * side;
  const sumSquared = sum * sum;
  return Math.max((sideSquared * max) / sumSquared, sumSquared / (sideSquared * min));
}

/**
 * Places `items` (those with a value above 0, largest first) inside `bounds`. Items of value 0
 * take no area and are left out.
 */
export function squarify<T>(items: readonly T[], valueOf: (item: T) => number, bounds: Rect): Placed<T>[] {
  const total = items.reduce((sum, item) => sum + Math.max(0, valueOf(item)), 0);
  if (total <= 0 || bounds.width <= 0 || bounds.height <= 0) return [];
  const scale = (bounds.width * bounds.height) / total;
  const queue = items
    .filter((item) => valueOf(item) > 0)
    .map((item) => ({ item, area: valueOf(item) * scale }))
    .sort((a, b) => b.area - a.area);
  const placed: Placed<T>[] = [];
  let free = { ...bounds };
  let row: typeof queue = [];
  let rowSum = 0;

  const layOut = () => {
    // The row fills a strip along the shorter side of the free rectangle.
    const alongWidth = free.width < free.height;
    const side = alongWidth ? free.width : free.height;
    const thickness = rowSum / side;
    let offset = 0;
    for (const { item, area } of row) {
      const length = area / thickness;
      placed.push({
        item,
        rect: alongWidth
          ? { x: free.x + offset, y: free.y, width: length, height: thickness }
          : { x: free.x, y: free.y + offset, width: thickness, height: length },
      });
      offset += length;
    }
    free = alongWidth
      ? { x: free.x, y: free.y + thickness, width: free.width, height: Math.max(0, free.height - thickness) }
      : { x: free.x + thickness, y: free.y, width: Math.max(0, free.width - thickness), height: free.height };
    row = [];
    rowSum = 0;
  };

  for (const next of queue) {
    // Areas come largest first, so a row's largest is its first and its smallest its last.
    const side = Math.min(free.width, free.height);
    if (
      row.length > 0 &&
      worstRatio(row[0]!.area, next.area, rowSum + next.area, side) > worstRatio(row[0]!.area, row.at(-1)!.area, rowSum, side)
    )
      layOut();
    row.push(next);
    rowSum += next.area;
  }
  if (row.length > 0) layOut();
  return placed;
}
