// Reads what the browser computed for the page: colour uses with their visible areas, gradients,
// custom properties at the root, fonts, and the brand images' candidates. Run by
// pipelines/styles/rendered.py with `page.evaluate(source, options)`; returns plain JSON.
async (options) => {
  const MAX_ELEMENTS = options.maxElements;
  const BUTTONISH = new RegExp(options.buttonish, "i");
  // A value the browser shows by itself (ua_defaults.js) is no choice of the brand's.
  const byDefault = (el, name, value) => {
    const tag = el.tagName.toLowerCase();
    const own = options.defaults[tag] || options.defaults[el instanceof SVGElement ? "g" : "span"];
    return own !== undefined && own[name] === value;
  };
  const doc = document.documentElement;
  const viewWidth = window.innerWidth;
  const viewHeight = window.innerHeight;
  const pageWidth = Math.max(doc.scrollWidth, viewWidth);
  const pageHeight = Math.min(Math.max(doc.scrollHeight, viewHeight), options.maxPageHeight);
  if (options.waitForFonts) {
    await Promise.race([document.fonts.ready, new Promise((done) => setTimeout(done, 1000))]);
  }

  // Any CSS colour (rgb, hsl, oklch, lab, color(), named) to sRGB through a 1x1 canvas.
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 1;
  const pen = canvas.getContext("2d", { willReadFrequently: true });
  const known = new Map();
  const rgb = (value) => {
    if (!value || value === "none" || value === "transparent") return null;
    if (known.has(value)) return known.get(value);
    let found = null;
    pen.fillStyle = "#000000";
    pen.fillStyle = value;
    const first = pen.fillStyle;
    pen.fillStyle = "#ffffff";
    pen.fillStyle = value;
    if (pen.fillStyle === first) {
      pen.clearRect(0, 0, 1, 1);
      pen.fillRect(0, 0, 1, 1);
      const [r, g, b, a] = pen.getImageData(0, 0, 1, 1).data;
      if (a >= 128) found = [r, g, b];
    }
    known.set(value, found);
    return found;
  };

  const clipArea = (rect, top, bottom) => {
    const y0 = rect.top + window.scrollY;
    const w = Math.min(rect.right, pageWidth) - Math.max(rect.left, 0);
    const h = Math.min(y0 + rect.height, bottom) - Math.max(y0, top);
    return w > 0 && h > 0 ? w * h : 0;
  };
  const context = (el) => {
    const classes = `${el.getAttribute("class") || ""} ${el.getAttribute("role") || ""}`;
    const tag = el.tagName.toLowerCase();
    if (tag === "button" || BUTTONISH.test(classes)) return "button";
    if (tag === "input" && /^(submit|button)$/i.test(el.type || "")) return "button";
    return el.closest("a") ? "link" : "";
  };

  const uses = new Map();
  const use = (colour, usage, ctx, area, firstArea) => {
    if (!colour) return;
    const key = `${colour.join(",")}|${usage}|${ctx}`;
    const entry = uses.get(key) || [colour[0], colour[1], colour[2], usage, ctx, 0, 0, 0];
    entry[5] += 1;
    entry[6] += area;
    entry[7] += firstArea;
    uses.set(key, entry);
  };
  const gradients = [];
  const elements = [doc, ...document.body.querySelectorAll("*")].slice(0, MAX_ELEMENTS);
  if (document.body) elements.splice(1, 0, document.body);
  for (const el of elements) {
    if (el !== doc && el !== document.body && !el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
    const style = getComputedStyle(el);
    const rect = el.getBoundingClientRect();
    const root = el === doc || el === document.body;
    const area = root ? pageWidth * pageHeight : clipArea(rect, 0, pageHeight);
    const firstArea = root ? viewWidth * viewHeight : clipArea(rect, window.scrollY, window.scrollY + viewHeight);
    if (!root && area === 0) continue;
    const ctx = root ? "" : context(el);
    const inSvg = el instanceof SVGElement && el.tagName.toLowerCase() !== "svg";
    if (inSvg) {
      if (!byDefault(el, "fill", style.fill)) use(rgb(style.fill), "fill", ctx, area, firstArea);
      if (!byDefault(el, "stroke", style.stroke) && parseFloat(style.strokeWidth) > 0) use(rgb(style.stroke), "fill", ctx, area / 4, firstArea / 4);
      continue;
    }
    if (!byDefault(el, "backgroundColor", style.backgroundColor)) use(rgb(style.backgroundColor), "background", ctx, area, firstArea);
    if (style.backgroundImage.includes("gradient(")) gradients.push([style.backgroundImage, area]);
    let chars = 0;
    for (const node of el.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) chars += node.textContent.trim().length;
    }
    if (chars > 0 && !byDefault(el, "color", style.color)) {
      const size = parseFloat(style.fontSize) || 16;
      const glyphs = Math.min(area, chars * size * size * 0.5);
      use(rgb(style.color), "text", ctx, glyphs, area ? (glyphs * firstArea) / area : 0);
    }
    for (const side of ["Top", "Right", "Bottom", "Left"]) {
      const width = parseFloat(style[`border${side}Width`]) || 0;
      const border = `${style[`border${side}Width`]} ${style[`border${side}Style`]} ${style[`border${side}Color`]}`;
      if (width > 0 && style[`border${side}Style`] !== "none" && !byDefault(el, `border${side}`, border)) {
        const length = side === "Top" || side === "Bottom" ? rect.width : rect.height;
        use(rgb(style[`border${side}Color`]), "border", ctx, length * width, 0);
      }
    }
  }

  const variables = [];
  const rootStyle = getComputedStyle(doc);
  for (let i = 0; i < rootStyle.length && variables.length < 500; i++) {
    const name = rootStyle[i];
    if (!name.startsWith("--")) continue;
    const value = rootStyle.getPropertyValue(name).trim();
    const colour = value.length < 100 ? rgb(value) : null;
    if (colour) variables.push([name, ...colour]);
  }

  // The font properties the page set on the element (its weight always: headings are bold).
  const fontsOf = (el) => {
    if (!el) return {};
    const style = getComputedStyle(el);
    const fonts = { "font-weight": style.fontWeight };
    if (!byDefault(el, "fontFamily", style.fontFamily)) fonts["font-family"] = style.fontFamily;
    if (!byDefault(el, "textTransform", style.textTransform)) fonts["text-transform"] = style.textTransform;
    return fonts;
  };
  const loadedFonts = [];
  for (const face of document.fonts) loadedFonts.push(face.family.replace(/^["']|["']$/g, ""));

  const absolute = (url) => {
    try {
      return url ? new URL(url, document.baseURI).href : null;
    } catch (error) {
      return null;
    }
  };
  const isLogo = (el) => {
    const own = ["class", "id", "alt", "src", "aria-label"].map((n) => el.getAttribute(n) || "").join(" ");
    const parent = el.parentElement;
    const around = parent ? ["class", "id", "aria-label"].map((n) => parent.getAttribute(n) || "").join(" ") : "";
    return `${own} ${around}`.toLowerCase().includes("logo");
  };
  // An inline SVG as a standalone document: its computed paint inlined, the symbols it uses
  // copied in, its rendered size, so it draws alone as it drew on the page.
  const PAINT = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "opacity", "stop-color", "stop-opacity", "font-family", "font-size", "font-weight", "visibility"];
  const svgMarkup = (svg) => {
    const copy = svg.cloneNode(true);
    const originals = [svg, ...svg.querySelectorAll("*")];
    const copies = [copy, ...copy.querySelectorAll("*")];
    originals.forEach((original, index) => {
      const style = getComputedStyle(original);
      const target = copies[index];
      for (const name of PAINT) target.style.setProperty(name, style.getPropertyValue(name));
    });
    const defs = document.createElementNS("http://www.w3.org/2000/svg", "defs");
    for (const used of copy.querySelectorAll("use")) {
      const href = used.getAttribute("href") || used.getAttribute("xlink:href") || "";
      const target = href.startsWith("#") ? document.getElementById(href.slice(1)) : null;
      if (target && !copy.querySelector(href)) defs.appendChild(target.cloneNode(true));
    }
    if (defs.childNodes.length) copy.prepend(defs);
    const rect = svg.getBoundingClientRect();
    copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
    copy.setAttribute("width", String(rect.width || 64));
    copy.setAttribute("height", String(rect.height || 64));
    return new XMLSerializer().serializeToString(copy);
  };
  const logos = [];
  const seen = new Set();
  const headerFirst = [...document.querySelectorAll("header img, header svg, nav img, nav svg, header [class*=logo], nav [class*=logo]"), ...document.querySelectorAll("img, svg, [class*=logo], [id*=logo]")];
  for (const el of headerFirst) {
    if (logos.length >= options.maxLogoCandidates) break;
    if (seen.has(el) || !isLogo(el)) continue;
    seen.add(el);
    const rect = el.getBoundingClientRect();
    const alt = el.getAttribute("alt") || el.getAttribute("aria-label") || "";
    const tag = el.tagName.toLowerCase();
    if (tag === "svg") {
      logos.push({ kind: "svg", markup: svgMarkup(el), alt, width: rect.width, height: rect.height });
    } else if (tag === "img" && (el.currentSrc || el.src)) {
      logos.push({ kind: "url", url: absolute(el.currentSrc || el.src), alt, width: rect.width, height: rect.height });
    } else {
      const background = getComputedStyle(el).backgroundImage.match(/url\("?(.*?)"?\)/);
      if (background) logos.push({ kind: "url", url: absolute(background[1]), alt, width: rect.width, height: rect.height });
    }
  }
  for (const selector of ['link[rel~="apple-touch-icon"]', 'link[rel~="icon"]', 'meta[property="og:image"]']) {
    const link = document.querySelector(selector);
    const url = link && absolute(link.getAttribute("href") || link.getAttribute("content"));
    if (url && !url.startsWith("data:")) logos.push({ kind: "url", url, alt: "", width: 0, height: 0 });
  }

  const heroImage = document.querySelector("[class*=hero] img, header img:not([class*=logo]), main img");
  let hero = null;
  if (heroImage && (heroImage.currentSrc || heroImage.src) && !isLogo(heroImage)) {
    const around = heroImage.parentElement ? heroImage.parentElement.innerText : "";
    hero = { url: absolute(heroImage.currentSrc || heroImage.src), alt: heroImage.getAttribute("alt") || "", context: around.split(/\s+/).join(" ").trim() };
  }

  return {
    uses: [...uses.values()],
    gradients,
    variables,
    fonts: {
      heading: fontsOf(document.querySelector("h1, h2, h3, [role=heading]")),
      body: fontsOf(document.querySelector("main p, p, body")),
    },
    loadedFonts,
    logos,
    hero,
    page: { width: pageWidth, height: pageHeight, viewWidth, viewHeight },
    rootText: byDefault(document.body, "color", getComputedStyle(document.body).color) ? null : rgb(getComputedStyle(document.body).color),
  };
}
