package agent

// HostID exposes hostID to the external tests, which build lease holder
// names the way this process would.
var HostID = hostID

// CurrentPrompt exposes currentPrompt to the benchmark of its per-turn cost.
var CurrentPrompt = (*Agent).currentPrompt
