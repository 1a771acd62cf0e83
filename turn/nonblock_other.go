//go:build !unix

package turn

const nonBlock = 0
