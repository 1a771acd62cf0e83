// Package guard holds the turn's stall guards: the identical-call streak
// (a tool called again and again with the same arguments and result), the
// said-it-but-stopped detector (a reply that announces an action and ends),
// and the empty-response guard (when to retry, fall back or give up).
//
// Guards never block anything; they tell the engine what they saw. Every text
// they produce for the model is an exported constant, so the engine can mark
// rows carrying them synthetic and the compressor can recognise them.
package guard
