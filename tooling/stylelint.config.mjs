// Stylelint for src/specdec_playable/kit/static/*.css and each episode's stylesheet (run from the repository root: npm run lint).
export default {
  extends: ["stylelint-config-standard"],
  rules: {
    // Colours live in kit/theme.py and reach the CSS as --sdp-* custom properties.
    "color-no-hex": true,
    "color-named": ["never", { ignore: ["inside-function"], ignoreProperties: [] }],
    // Short rules stay on one line; longer ones are broken over several.
    "declaration-block-single-line-max-declarations": null,
  },
};
