// ESLint for src/specdec_playable/kit/static/*.js (run from the repository root: npm run lint).
import js from "@eslint/js";
import globals from "globals";

const browser = { ...globals.browser, Bokeh: "readonly" };

export default [
  js.configs.recommended,
  {
    // ES modules that Panel's JSComponent loads (export function render).
    files: ["src/specdec_playable/kit/static/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: browser },
    rules: { eqeqeq: ["error", "smart"], "no-var": "error", "prefer-const": "error" },
  },
  {
    // Bodies of Bokeh CustomJS callbacks: plain scripts whose arguments each file declares
    // in its /* global */ header (lanes.js and the frame hooks appended to it).
    files: ["src/specdec_playable/kit/static/lanes.js", "src/specdec_playable/kit/static/*_frame.js"],
    languageOptions: { sourceType: "script" },
  },
];
