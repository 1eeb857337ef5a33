// Sfumato dashboard: small enhancements over pages that work without JavaScript.
"use strict";
(function () {
  const prefix = "/dashboard";
  const csrf = () => (document.querySelector("main[data-csrf]") || {}).dataset?.csrf || "";

  // A style's colours and type specimens, which the page names in data attributes: its
  // Content-Security-Policy allows no inline style, and styles set from here are not inline.
  document.querySelectorAll("[data-background]").forEach((element) => {
    element.style.background = element.dataset.background;
  });
  document.querySelectorAll("[data-font-family]").forEach((element) => {
    element.style.fontFamily = element.dataset.fontFamily;
    element.style.fontWeight = element.dataset.fontWeight;
    element.style.textTransform = element.dataset.textTransform;
  });

  // Copy buttons (the new key's plaintext).
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const field = document.getElementById(button.dataset.copy);
    try {
      await navigator.clipboard.writeText(field.value);
    } catch {
      field.select();
      document.execCommand("copy");
    }
    button.textContent = "Copied";
  });

  // A form submits once: a second click while the first is on its way does nothing (the
  // server makes one job of both anyway, by the form's idempotency token).
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!form.matches("[data-once]")) return;
    if (form.dataset.sent) { event.preventDefault(); return; }
    form.dataset.sent = "1";
    form.querySelectorAll("button[type=submit]").forEach((b) => b.setAttribute("aria-busy", "true"));
  });
  // Back to a page kept in the browser's cache: its forms may be sent again (a form sent twice
  // with its one token still lands on the one job it made).
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    document.querySelectorAll("form[data-sent]").forEach((form) => { delete form.dataset.sent; });
  });

  // A finished video's poster is made just after the job completes: its card may come without
  // one, and then waits for it (a long-poll, tried a few times).
  async function awaitPoster(video) {
    const card = video.closest(".job-card");
    if (!card) return;
    for (let attempt = 0; attempt < 4; attempt += 1) {
      let response;
      try {
        response = await fetch(`${prefix}/jobs/${card.dataset.jobId}/poster`, { credentials: "same-origin" });
      } catch { continue; }
      if (!response.ok) return;
      const { posterUrl } = await response.json();
      if (posterUrl) {
        video.poster = posterUrl;
        video.removeAttribute("data-awaiting-poster");
        return;
      }
    }
  }
  document.querySelectorAll("video[data-awaiting-poster]").forEach(awaitPoster);
  // Where a job in flight stands, in the words the server writes (gallery.standing_text).
  function inAbout(moment) {
    const seconds = Math.max(0, (Date.parse(moment) - Date.now()) / 1000);
    return seconds < 120 ? `in about ${Math.round(seconds)} s` : `in about ${Math.round(seconds / 60)} min`;
  }
  function standingText(job) {
    if (job.status === "pending" && job.queuePosition) {
      return `#${job.queuePosition} in queue` + (job.estimatedStartAt ? `, starts ${inAbout(job.estimatedStartAt)}` : "");
    }
    if (job.status === "processing" && job.estimatedCompletionAt) return `ends ${inAbout(job.estimatedCompletionAt)}`;
    return "";
  }

  // Live progress: every card of a job in flight listens to the job's event stream (the API's
  // Server-Sent Events): its bar and status chip follow the job, and when the job ends the
  // card's finished version is swapped in. Where the stream does not get through, it polls the
  // job's progress instead.
  function watch(card) {
    const id = card.dataset.jobId;
    const detail = card.hasAttribute("data-detail");
    const bar = card.querySelector("[data-progress]");
    const label = card.querySelector("[data-percent]");
    const standing = card.querySelector("[data-standing]");
    const status = card.querySelector(".status");
    const preview = card.querySelector("[data-preview]");
    let ended = false;
    function show(job) {
      const percent = Math.round(job.progress * 100);
      if (bar) { bar.value = percent; bar.textContent = `${percent}%`; }
      if (label) label.textContent = `${percent}%`;
      if (standing) standing.textContent = standingText(job);
      if (status && job.status !== status.textContent) {
        status.textContent = job.status;
        status.className = `status status-${job.status}`;
      }
      // The live preview: a new URL each time the picture moves on (an old one may be gone).
      if (preview && job.previewUrl && preview.getAttribute("src") !== job.previewUrl) {
        preview.src = job.previewUrl;
        preview.hidden = false;
      }
      if ((job.status === "completed" || job.status === "failed") && !ended) {
        ended = true;
        finish();
      }
    }
    async function finish() {
      const fresh = await fetch(`${prefix}/jobs/${id}/card?detail=${detail}`, { credentials: "same-origin" });
      if (!fresh.ok) return;
      const holder = document.createElement("div");
      holder.innerHTML = await fresh.text();
      const replacement = holder.querySelector(".job-card");
      if (!replacement) return;
      card.replaceWith(replacement);
      replacement.querySelectorAll("video[data-awaiting-poster]").forEach(awaitPoster);
    }
    let delay = 500;
    async function poll() {
      try {
        const response = await fetch(`${prefix}/jobs/${id}/progress`, { credentials: "same-origin" });
        if (response.ok) show(await response.json());
      } catch { /* the network blinked: try again */ }
      if (ended) return;
      delay = Math.min(delay * 1.2, 3000);
      setTimeout(poll, delay);
    }
    if (!window.EventSource) { setTimeout(poll, delay); return; }
    const stream = new EventSource(`${prefix}/jobs/${id}/events`);
    let heard = false;
    stream.onmessage = (message) => {
      heard = true;
      show(JSON.parse(message.data).data);
      if (ended) stream.close();
    };
    stream.onerror = () => {
      if (ended) return;
      // Never heard from: the stream does not get through here, so poll. Otherwise the
      // browser reconnects by itself (with Last-Event-ID).
      if (!heard) { stream.close(); setTimeout(poll, delay); }
    };
  }
  document.querySelectorAll(".job-card[data-live]").forEach(watch);

  // Each create form's price before it is sent: the server priced every choice the form offers
  // (core/prices.py) into `data-prices`, keyed by the priced fields' values joined with "|".
  document.querySelectorAll("form[data-prices]").forEach((form) => {
    const prices = JSON.parse(form.dataset.prices);
    const names = form.dataset.priceFields.split(" ");
    const output = form.querySelector("[data-price]");
    function update() {
      const key = names.map((name) => {
        const field = form.elements[name];
        const value = field.value.trim();
        // Durations are keyed as the server formats numbers ("6", "6.5").
        return field.type === "number" && value !== "" ? String(Number(value)) : value;
      }).join("|");
      const price = prices[key];
      output.textContent = price === undefined ? "—" : `${price} credit${price === 1 ? "" : "s"}`;
    }
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  });

  // Uploads: drag and drop (or choose), then presign -> PUT -> complete from the browser.
  const zone = document.querySelector("[data-dropzone]");
  if (zone) {
    const input = zone.querySelector("input[type=file]");
    const status = zone.querySelector("[data-upload-status]");
    const say = (text) => { status.textContent = text; };
    async function send(file) {
      const headers = { "content-type": "application/json", "x-csrf-token": csrf() };
      const presigned = await fetch(`${prefix}/uploads/presign`, {
        method: "POST", headers, credentials: "same-origin",
        body: JSON.stringify({ filename: file.name, contentType: file.type }),
      });
      const ticket = await presigned.json();
      if (!presigned.ok) throw new Error(ticket.error || "could not start the upload");
      const put = await fetch(ticket.uploadUrl, { method: "PUT", headers: { "content-type": file.type }, body: file });
      if (!put.ok) throw new Error(`the storage refused the file (${put.status})`);
      const done = await fetch(`${prefix}/uploads/${ticket.uploadId}/complete`, {
        method: "POST", headers: { "x-csrf-token": csrf() }, credentials: "same-origin",
      });
      const result = await done.json();
      if (!done.ok) throw new Error(result.error || "the file was not accepted");
      return result;
    }
    async function sendAll(files) {
      let sent = 0;
      for (const file of files) {
        say(`Uploading ${file.name}…`);
        try {
          await send(file);
          sent += 1;
        } catch (error) {
          say(`${file.name}: ${error.message}`);
          return;
        }
      }
      say(`Uploaded ${sent} file${sent === 1 ? "" : "s"}.`);
      window.location.assign(`${prefix}/uploads?done=uploaded`);
    }
    zone.addEventListener("submit", (event) => {
      event.preventDefault();
      if (input.files.length) sendAll([...input.files]);
    });
    ["dragenter", "dragover"].forEach((name) => zone.addEventListener(name, (event) => {
      event.preventDefault(); zone.classList.add("over");
    }));
    ["dragleave", "drop"].forEach((name) => zone.addEventListener(name, () => zone.classList.remove("over")));
    zone.addEventListener("drop", (event) => {
      event.preventDefault();
      sendAll([...event.dataTransfer.files]);
    });
  }
})();
