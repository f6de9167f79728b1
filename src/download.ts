/**
 * Saves a blob as a file the browser downloads, under a name. The link has a target: Grafana intercepts clicks on
 * links without one and navigates to them itself, which loses the file name.
 */
export function saveFile(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.target = '_blank';
  a.rel = 'noopener';
  a.style.display = 'none';
  document.body.appendChild(a);
  a.click();
  // Later: the browser reads the URL after the click has returned.
  setTimeout(() => {
    a.remove();
    URL.revokeObjectURL(url);
  }, 60_000);
}
