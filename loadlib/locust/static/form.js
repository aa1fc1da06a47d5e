// Locust's start form, "Custom parameters": a short label on each loadlib field and its help on a line below it.
// Locust labels a field "Llm Max Tokens (the whole help text)" in one line that is cut off; window.llmForm (written
// by loadlib/locust/webform.py) gives, by field name, the label and the help. Only text nodes React already owns are
// changed (their value, not the node) and one help element is added per field, so React's later renders still match.
"use strict";

(function () {
  const fields = window.llmForm || {};
  const style = document.createElement("style");
  style.textContent =
    ".llm-help{display:block;margin:4px 14px 0;font-size:.75rem;line-height:1.4;opacity:.72;white-space:normal}" +
    ".MuiFormControlLabel-label .llm-help{margin:2px 0 0}";
  document.head.appendChild(style);

  function setText(node, text) {
    const first = node && [...node.childNodes].find((c) => c.nodeType === Node.TEXT_NODE && c.nodeValue.trim());
    if (first && first.nodeValue !== text) first.nodeValue = text;
  }

  function dress(name, field) {
    const input = document.querySelector(`[name="${name}"]`);
    if (!input) return;
    const box = input.closest(".MuiFormControl-root") || input.closest(".MuiFormControlLabel-root");
    if (!box) return;
    const label = box.querySelector("label.MuiInputLabel-root") || box.querySelector(".MuiFormControlLabel-label");
    setText(label, field.label);
    setText(box.querySelector("legend > span"), field.label); // the gap in the outline is as wide as this text
    const host = box.classList.contains("MuiFormControlLabel-root") ? label : box;
    if (host && field.help && !host.querySelector(".llm-help")) {
      const help = document.createElement(host === box ? "p" : "span");
      help.className = "llm-help";
      help.textContent = field.help;
      host.appendChild(help);
    }
  }

  let queued = false;
  function dressAll() {
    queued = false;
    Object.entries(fields).forEach(([name, field]) => dress(name, field));
  }

  // The form is drawn (and drawn again: "New test", "Edit") by React after this script runs.
  new MutationObserver(() => {
    if (!queued) {
      queued = true;
      requestAnimationFrame(dressAll);
    }
  }).observe(document.body, { childList: true, subtree: true });
  dressAll();
})();
