// Package compact keeps a turn's request inside the model's context window.
//
// It holds cheap token estimation, the Accountant that combines the provider's reported
// prompt tokens with estimates of what was added since, the compression
// Threshold, the per-turn attempt Budget, and the Compressor that prunes old
// tool output and summarizes the middle of a transcript with an auxiliary
// model. Nothing here calls the network except the Compressor's one summary
// request.
package compact
