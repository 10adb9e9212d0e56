// Command kgf-htpasswd prints one htpasswd line with a bcrypt hash, the only kind the distribution
// registry's htpasswd authentication accepts, so tests need no Apache tools.
//
// Usage: kgf-htpasswd USER <password-file >>htpasswd
//
// The password is read from standard input (one trailing newline is dropped) so that it never
// appears in a process list.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// cost is Apache `htpasswd -B`'s default, with which the registry's documentation makes its file.
// The registry checks the hash on every request it authenticates: bcrypt.DefaultCost (10) would
// make each check 32 times the work, and an image push is dozens of requests.
const cost = 5

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kgf-htpasswd:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 || os.Args[1] == "" || strings.Contains(os.Args[1], ":") {
		return fmt.Errorf("usage: %s USER <password-file (USER must not contain ':')", os.Args[0])
	}
	password, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(strings.TrimSuffix(string(password), "\n")), cost)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s:%s\n", os.Args[1], hash)
	return err
}
