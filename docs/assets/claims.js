// Checked claims: a tap, a click, Enter or Space on a claim shows what was checked and measured (its tip, the
// element after it), which a touch screen's reader cannot get from a hover. A second one hides it again.
(() => {
  const toggle = (claim) => {
    const tip = document.getElementById(claim.getAttribute("aria-describedby"));
    if (!tip) return;
    const open = tip.hidden;
    tip.hidden = !open;
    claim.setAttribute("aria-expanded", String(open));
  };
  const claimOf = (target) => target instanceof Element ? target.closest(".pitfalls-claim[aria-describedby]") : null;
  document.addEventListener("click", (event) => {
    const claim = claimOf(event.target);
    if (claim) toggle(claim);
  });
  document.addEventListener("keydown", (event) => {
    const claim = claimOf(event.target);
    if (claim && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();  // Space would scroll the page
      toggle(claim);
    }
  });
})();
