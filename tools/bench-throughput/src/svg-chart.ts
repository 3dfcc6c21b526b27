/** One line of a line chart: a value per x label, or null where the cell was skipped. */
export interface LineSeries {
  name: string;
  values: readonly (number | null)[];
}

export interface LineChartSpec {
  title: string;
  xTitle: string;
  yTitle: string;
  xLabels: readonly string[];
  series: readonly LineSeries[];
}

/** One group of bars (e.g. a backend and a concurrency), one bar per variant. */
export interface BarGroup {
  label: string;
  bars: readonly { name: string; value: number | null }[];
}

export interface BarChartSpec {
  title: string;
  yTitle: string;
  groups: readonly BarGroup[];
  /** Draw a dashed horizontal line here (a goal), labelled. */
  reference?: { value: number; label: string };
  format: (value: number) => string;
}

// Colour-blind-safe palette (Okabe–Ito), enough for the series these charts carry.
const palette = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000'];
const font = 'font-family="system-ui, sans-serif"';

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** A "nice" axis maximum (1, 2 or 5 × a power of ten) at or above `value`, and its tick step. */
export function niceAxis(value: number): { max: number; step: number } {
  if (!(value > 0)) return { max: 1, step: 0.2 };
  const power = 10 ** Math.floor(Math.log10(value));
  for (const factor of [1, 2, 2.5, 5, 10]) {
    const max = factor * power;
    if (max >= value) return { max, step: max / 5 };
  }
  return { max: 10 * power, step: 2 * power };
}

function compact(value: number): string {
  if (value >= 1_000_000) return `${+(value / 1_000_000).toFixed(1)}M`;
  if (value >= 1_000) return `${+(value / 1_000).toFixed(1)}K`;
  return `${+value.toFixed(2)}`;
}

function legend(names: readonly string[], x: number, y: number): string {
  return names
    .map(
      (name, index) =>
        `<rect x="${x}" y="${y + index * 18}" width="12" height="12" fill="${palette[index % palette.length]}"/>` +
        `<text x="${x + 18}" y="${y + index * 18 + 10}" font-size="12" ${font}>${escapeXml(name)}</text>`,
    )
    .join('');
}

/** Throughput against concurrency: x labels equally spaced, y linear from 0. */
export function lineChart(spec: LineChartSpec): string {
  const width = 760;
  const height = 400;
  const left = 70;
  const right = 220;
  const top = 40;
  const bottom = 60;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const all = spec.series.flatMap((series) =>
    series.values.filter((value): value is number => value !== null),
  );
  const axis = niceAxis(Math.max(0, ...all));
  const xAt = (index: number) =>
    left + (spec.xLabels.length <= 1 ? plotW / 2 : (index * plotW) / (spec.xLabels.length - 1));
  const yAt = (value: number) => top + plotH - (value / axis.max) * plotH;
  const parts: string[] = [];
  parts.push(
    `<text x="${left}" y="24" font-size="15" font-weight="bold" ${font}>${escapeXml(spec.title)}</text>`,
  );
  for (let tick = 0; tick <= axis.max + axis.step / 2; tick += axis.step) {
    const y = yAt(tick);
    parts.push(`<line x1="${left}" y1="${y}" x2="${left + plotW}" y2="${y}" stroke="#ddd"/>`);
    parts.push(
      `<text x="${left - 6}" y="${y + 4}" font-size="11" text-anchor="end" ${font}>${compact(tick)}</text>`,
    );
  }
  spec.xLabels.forEach((label, index) => {
    parts.push(
      `<text x="${xAt(index)}" y="${top + plotH + 18}" font-size="11" text-anchor="middle" ${font}>${escapeXml(label)}</text>`,
    );
  });
  parts.push(
    `<text x="${left + plotW / 2}" y="${height - 14}" font-size="12" text-anchor="middle" ${font}>${escapeXml(spec.xTitle)}</text>`,
    `<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" font-size="12" text-anchor="middle" ${font}>${escapeXml(spec.yTitle)}</text>`,
    `<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="#333"/>`,
  );
  spec.series.forEach((series, index) => {
    const colour = palette[index % palette.length];
    const points = series.values
      .map((value, at) => (value === null ? null : `${xAt(at)},${yAt(value)}`))
      .filter((point): point is string => point !== null);
    if (points.length > 1) {
      parts.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.join(' ')}"/>`,
      );
    }
    for (const point of points) {
      const [x, y] = point.split(',');
      parts.push(`<circle cx="${x}" cy="${y}" r="3.5" fill="${colour}"/>`);
    }
  });
  parts.push(
    legend(
      spec.series.map((series) => series.name),
      left + plotW + 20,
      top,
    ),
  );
  return svg(width, height, parts);
}

/** Grouped vertical bars; negative values go below the zero line. */
export function barChart(spec: BarChartSpec): string {
  const names = [...new Set(spec.groups.flatMap((group) => group.bars.map((bar) => bar.name)))];
  const values = spec.groups.flatMap((group) =>
    group.bars.map((bar) => bar.value).filter((value): value is number => value !== null),
  );
  const reference = spec.reference?.value ?? 0;
  const up = niceAxis(Math.max(0, reference, ...values));
  const down = Math.min(0, ...values) < 0 ? niceAxis(-Math.min(...values)).max : 0;
  const groupW = Math.max(48, names.length * 16 + 16);
  const left = 70;
  const right = 200;
  const top = 40;
  const bottom = 150;
  const plotW = spec.groups.length * groupW;
  const plotH = 280;
  const width = left + plotW + right;
  const height = top + plotH + bottom;
  const span = up.max + down;
  const yAt = (value: number) => top + ((up.max - value) / span) * plotH;
  const parts: string[] = [];
  parts.push(
    `<text x="${left}" y="24" font-size="15" font-weight="bold" ${font}>${escapeXml(spec.title)}</text>`,
  );
  // 0 - down, not -down: with no negative values that is -0, which prints as "-0".
  for (let tick = 0 - down; tick <= up.max + up.step / 2; tick += up.step) {
    const y = yAt(tick);
    parts.push(`<line x1="${left}" y1="${y}" x2="${left + plotW}" y2="${y}" stroke="#ddd"/>`);
    parts.push(
      `<text x="${left - 6}" y="${y + 4}" font-size="11" text-anchor="end" ${font}>${escapeXml(spec.format(tick))}</text>`,
    );
  }
  spec.groups.forEach((group, groupIndex) => {
    const x0 = left + groupIndex * groupW + 8;
    group.bars.forEach((bar) => {
      const slot = names.indexOf(bar.name);
      const x = x0 + slot * 16;
      if (bar.value === null) {
        parts.push(
          `<text x="${x + 6}" y="${yAt(0) - 4}" font-size="10" text-anchor="middle" ${font}>–</text>`,
        );
        return;
      }
      const y = Math.min(yAt(bar.value), yAt(0));
      const h = Math.abs(yAt(bar.value) - yAt(0));
      parts.push(
        `<rect x="${x}" y="${y}" width="13" height="${Math.max(h, 0.5)}" fill="${palette[slot % palette.length]}"><title>${escapeXml(`${group.label} ${bar.name}: ${spec.format(bar.value)}`)}</title></rect>`,
      );
    });
    const labelX = left + groupIndex * groupW + groupW / 2;
    parts.push(
      `<text transform="translate(${labelX} ${top + plotH + 12}) rotate(40)" font-size="11" ${font}>${escapeXml(group.label)}</text>`,
    );
  });
  parts.push(
    `<line x1="${left}" y1="${yAt(0)}" x2="${left + plotW}" y2="${yAt(0)}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="#333"/>`,
    `<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" font-size="12" text-anchor="middle" ${font}>${escapeXml(spec.yTitle)}</text>`,
  );
  if (spec.reference !== undefined) {
    const y = yAt(spec.reference.value);
    parts.push(
      `<line x1="${left}" y1="${y}" x2="${left + plotW}" y2="${y}" stroke="#D55E00" stroke-dasharray="6 4"/>`,
      `<text x="${left + plotW + 6}" y="${y + 4}" font-size="11" fill="#D55E00" ${font}>${escapeXml(spec.reference.label)}</text>`,
    );
  }
  parts.push(legend(names, left + plotW + 20, top + 20));
  return svg(width, height, parts);
}

function svg(width: number, height: number, parts: readonly string[]): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="#fff"/>${parts.join('')}</svg>\n`
  );
}
