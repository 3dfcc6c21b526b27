import { describe, expect, it } from 'vitest';
import { barChart, lineChart, niceAxis } from './svg-chart.js';

describe('svg charts', () => {
  it('picks a round axis maximum at or above the data', () => {
    expect(niceAxis(13_400)).toEqual({ max: 20_000, step: 4_000 });
    expect(niceAxis(0.8)).toEqual({ max: 1, step: 0.2 });
    expect(niceAxis(0)).toEqual({ max: 1, step: 0.2 });
  });

  it('draws one polyline per series with two or more points, and escapes text', () => {
    const svg = lineChart({
      title: 'a < b',
      xTitle: 'c',
      yTitle: 'events/s',
      xLabels: ['1', '8', '32'],
      series: [
        { name: 'store', values: [1, 2, 3] },
        { name: 'raw & co', values: [2, null, 4] },
      ],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<polyline/g)).toHaveLength(2);
    expect(svg).toContain('a &lt; b');
    expect(svg).toContain('raw &amp; co');
  });

  it('draws a bar per non-null value and a dashed reference line', () => {
    const svg = barChart({
      title: 'overhead',
      yTitle: '%',
      groups: [
        {
          label: 'sqlite c16',
          bars: [
            { name: 'eager', value: 12 },
            { name: 'lazy', value: -1 },
          ],
        },
        {
          label: 'pg c16',
          bars: [
            { name: 'eager', value: null },
            { name: 'lazy', value: 2 },
          ],
        },
      ],
      reference: { value: 5, label: 'goal' },
      format: (value) => `${value}`,
    });
    expect(svg.match(/<rect x=/g)?.length).toBe(3 + 2);
    expect(svg).toContain('stroke-dasharray');
  });
});
