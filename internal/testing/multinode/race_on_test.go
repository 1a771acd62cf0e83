//go:build race && unix

package multinode

// raceBuild: the nodes are built with -race too when the tests are.
const raceBuild = true
