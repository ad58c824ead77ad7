/*
 * aerix for pages without modules: <script src="./aerix.js"></script>
 *
 *   const ai = await window.aerix.boot({ model: "./models/tiny.gguf" });
 *   const answer = await ai.agent({ tools: [...] }).ask("Hello");
 *
 * It loads aerix.mjs from the same folder as this script; nothing else is fetched.
 */
(function () {
  var script = /** @type {HTMLScriptElement} */ (document.currentScript);
  var moduleUrl = new URL("aerix.mjs", script.src).href;
  Object.assign(window, {
    aerix: {
      /** @param {object} [options] aerix.mjs's `boot` options */
      boot: function (options) {
        return import(moduleUrl).then(function (m) {
          return m.boot(options);
        });
      },
    },
  });
})();
