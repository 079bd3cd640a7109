// selp serve: collapsible tree nodes, and the progress of a running job (polled; the page
// reloads itself when the job is over, and shows its result or error then).
"use strict";

document.addEventListener("click", (event) => {
  const node = event.target.closest("svg .n.c");
  if (node) node.parentElement.classList.toggle("folded");
});

function watchJob(box) {
  const id = box.dataset.job;
  const progress = box.querySelector(".progress");
  const elapsed = box.querySelector(".elapsed");
  box.querySelector(".cancel").addEventListener("click", async () => {
    await fetch(`/jobs/${id}/cancel`, { method: "POST" });
    location.reload();
  });
  const poll = async () => {
    const response = await fetch(`/jobs/${id}`);
    const job = await response.json();
    if (job.status !== "running") { location.reload(); return; }
    progress.textContent = job.progress;
    elapsed.textContent = `(${job.seconds.toFixed(1)}s)`;
    setTimeout(poll, 500);
  };
  setTimeout(poll, 500);
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".job[data-job]").forEach(watchJob);
});
