/**
 * The colours of the graph's edges by what their traffic does, shared by the graph's stylesheet and the
 * legend (console.css repeats them; a test keeps the two equal). "Changed by the plan step" is a blue that
 * stays apart from every other edge colour, denied red above all, for the common colour-vision
 * deficiencies (protanopia, deuteranopia, tritanopia): a test measures it under their simulation.
 */
export const EdgeColour = {
  /** Plain traffic. */
  plain: '#8a9bb0',
  someDenied: '#b0607a',
  denied: '#c62828',
  passthrough: '#d9730d',
  blackhole: '#222222',
  /** Edges whose traffic the plan step shown changed. */
  changed: '#0072b2',
  /** The traced request's path. */
  onPath: '#f2b705',
  /** The edge selected (tapped, or reached with the arrow keys). */
  selected: '#111111',
} as const;
