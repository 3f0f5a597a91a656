// Renders every Vega-Lite specification DIR/*.vl.json (written by `distsgd report`) to DIR/*.svg with Vega's own SVG
// renderer, headless (no browser): the plots of report.html as files for papers.
// Usage: node export_svg.mjs DIR
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node export_svg.mjs DIR');
  process.exit(2);
}
const files = readdirSync(dir).filter((f) => f.endsWith('.vl.json')).sort();
for (const file of files) {
  const spec = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  writeFileSync(join(dir, file.replace(/\.vl\.json$/, '.svg')), await view.toSVG());
  view.finalize();
}
console.log(`exported ${files.length} plots to ${dir}`);
