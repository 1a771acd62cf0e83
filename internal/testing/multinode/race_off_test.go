//go:build !race && unix

package multinode

const raceBuild = false
