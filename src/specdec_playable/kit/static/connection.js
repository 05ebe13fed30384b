// The page's connection to the server, told to the visitor. Bokeh's client fires
// "connection_lost" when the page's websocket closes (the server stopped, the network dropped,
// a proxy timed out): from then on no control answers, so a banner at the top of the page says
// so and offers a reload (the address keeps the controls, so a reload comes back where the
// visitor was). "client_reconnected" takes the banner away. Colours come from the theme (args).
/* global cb_obj, colors */
/* exported sdp_connection */

function sdp_connection(event) {
  const ID = 'sdp-connection-banner';
  const shown = document.getElementById(ID);
  if (event && event.event_name === 'client_reconnected') {
    if (shown) shown.remove();
    return;
  }
  if (shown) return;
  const banner = document.createElement('div');
  banner.id = ID;
  banner.setAttribute('role', 'alert');
  banner.style.cssText = [
    'position: fixed', 'top: 0', 'left: 0', 'right: 0', 'z-index: 10000',
    'display: flex', 'flex-wrap: wrap', 'align-items: center', 'justify-content: center',
    'gap: 8px 16px', 'padding: 10px 16px', 'font: 16px/1.4 system-ui, sans-serif',
    `color: ${colors.ink}`, `background: ${colors.notice}`,
    `border-bottom: 2px solid ${colors.line}`,
  ].join('; ');
  const text = document.createElement('span');
  text.textContent = 'The connection to the server was lost, so this page no longer answers. '
    + 'Reloading brings it back with your settings.';
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = 'Reload the page';
  button.style.cssText = [
    'min-height: 44px', 'padding: 0 16px', 'font: inherit', 'font-weight: 600', 'cursor: pointer',
    `color: ${colors.ink}`, `background: ${colors.paper}`, `border: 1px solid ${colors.ink}`,
    'border-radius: 4px',
  ].join('; ');
  button.addEventListener('click', () => window.location.reload());
  banner.append(text, button);
  document.body.prepend(banner);
}
sdp_connection(cb_obj);
