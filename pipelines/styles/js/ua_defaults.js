// The browser's own styles for each element type, on a page with no author styles: what a page
// that sets nothing shows (black text, blue links, grey buttons, Times New Roman), which tells no
// brand. Run once per browser by pipelines/styles/rendered.py; read_page.js skips these values.
(tags) => {
  const defaults = {};
  for (const tag of tags) {
    const svg = ["svg", "g", "path", "circle", "rect", "ellipse", "line", "polygon", "polyline", "text"].includes(tag);
    const el = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
    if (tag === "a") el.setAttribute("href", "#somewhere");
    const host = svg && tag !== "svg" ? document.body.appendChild(document.createElementNS("http://www.w3.org/2000/svg", "svg")) : document.body;
    host.appendChild(el);
    const style = getComputedStyle(el);
    const found = {};
    for (const name of ["color", "backgroundColor", "fontFamily", "textTransform", "fill", "stroke"]) found[name] = style[name];
    for (const side of ["Top", "Right", "Bottom", "Left"]) {
      found[`border${side}`] = `${style[`border${side}Width`]} ${style[`border${side}Style`]} ${style[`border${side}Color`]}`;
    }
    defaults[tag] = found;
  }
  return defaults;
}
