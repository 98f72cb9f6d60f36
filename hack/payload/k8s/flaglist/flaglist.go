// Package flaglist prints the flags of a pflag.FlagSet as JSON, for the flag lists the
// simulated hosts check command lines against (hack/build-flag-lists.sh).
package flaglist

import (
	"encoding/json"
	"os"
	"sort"

	"github.com/spf13/pflag"
)

// Flag is one flag as pflag parses it.
type Flag struct {
	Name      string `json:"name"`
	Shorthand string `json:"shorthand,omitempty"`
	// NoOptDefVal is the value a flag given without "=value" takes (bool flags: "true");
	// empty when the flag needs a value.
	NoOptDefVal string `json:"noOptDefVal,omitempty"`
	// Deprecated is pflag's message for a deprecated flag (still accepted, with a warning).
	Deprecated          string `json:"deprecated,omitempty"`
	ShorthandDeprecated string `json:"shorthandDeprecated,omitempty"`
	Hidden              bool   `json:"hidden,omitempty"`
	Type                string `json:"type"`
}

// List is what a generator prints.
type List struct {
	Program string `json:"program"`
	Version string `json:"version"`
	// Syntax is the parser whose rules apply ("pflag").
	Syntax string `json:"syntax"`
	// NormalizesWordSeparators: "_" in a flag name is read as "-" (cliflag.WordSepNormalizeFunc).
	NormalizesWordSeparators bool   `json:"normalizesWordSeparators"`
	Flags                    []Flag `json:"flags"`
}

// FromFlagSet lists every flag of fs, hidden and deprecated ones included (both are accepted).
func FromFlagSet(fs *pflag.FlagSet) []Flag {
	var flags []Flag
	fs.VisitAll(func(f *pflag.Flag) {
		flags = append(flags, Flag{
			Name:                f.Name,
			Shorthand:           f.Shorthand,
			NoOptDefVal:         f.NoOptDefVal,
			Deprecated:          f.Deprecated,
			ShorthandDeprecated: f.ShorthandDeprecated,
			Hidden:              f.Hidden,
			Type:                f.Value.Type(),
		})
	})
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	return flags
}

// Print writes l to standard output as JSON and exits on failure.
func Print(l List) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(l); err != nil {
		os.Stderr.WriteString("cannot write the flag list: " + err.Error() + "\n")
		os.Exit(1)
	}
}

// Fail reports a generator error and exits.
func Fail(message string) {
	os.Stderr.WriteString(message + "\n")
	os.Exit(1)
}
