package config

import "github.com/tokenbudget/tokenbudget/shared/modelname"

// Model names in pricing, limits.per_model and models are resolved as
// package modelname resolves a request's model: a dated snapshot, a
// version tag, a provider prefix or another letter case takes the entry it
// extends. Two entries equal but for letter case would be one entry, so
// they are refused. Entries whose spellings meet (one shadows another for
// some spellings) are listed as notes by `config validate`, so the operator
// knows which of a family's spellings each governs; they are not warnings,
// since listing gpt-4o and gpt-4o-mini is what a correct config does.

// pricingNames is the pricing section's model entries, default left out.
func (c *Config) pricingNames() []string {
	names := make([]string, 0, len(c.Pricing))
	for _, n := range sortedMapKeys(c.Pricing) {
		if n != DefaultPriceEntry {
			names = append(names, n)
		}
	}
	return names
}

// limitedModels is the models limits.per_model and models name, with the
// path of the section each is first named in.
func (c *Config) limitedModels() (names []string, paths map[string]string) {
	paths = map[string]string{}
	for _, n := range sortedMapKeys(c.RateLimiting.Limits.PerModel) {
		paths[n] = mapPath("rate_limiting.limits.per_model", n)
	}
	for _, n := range sortedMapKeys(c.Models) {
		if _, ok := paths[n]; !ok {
			paths[n] = mapPath("models", n)
		}
	}
	return sortedMapKeys(paths), paths
}

func (c *Config) validateModelNames(v *validator) {
	for _, pair := range modelname.Collisions(c.pricingNames()) {
		v.add(mapPath("pricing", pair[1]), "names the same model as "+mapPath("pricing", pair[0])+" (model names are matched without regard to letter case)")
	}
	names, paths := c.limitedModels()
	for _, pair := range modelname.Collisions(names) {
		v.add(paths[pair[1]], "names the same model as "+paths[pair[0]]+" (model names are matched without regard to letter case)")
	}
}

// ModelNameNotes lists the entries that shadow another entry for some
// spellings, each with its JSON path and the spellings it takes.
func (c *Config) ModelNameNotes() []string {
	var w []string
	pricing := func(n string) string { return mapPath("pricing", n) }
	for _, o := range modelname.Overlaps(c.pricingNames()) {
		w = append(w, overlapWarning(pricing(o.Narrow), pricing(o.Wide), o))
	}
	names, paths := c.limitedModels()
	for _, o := range modelname.Overlaps(names) {
		w = append(w, overlapWarning(paths[o.Narrow], paths[o.Wide], o))
	}
	return w
}

func overlapWarning(narrowPath, widePath string, o modelname.Overlap) string {
	bare := modelname.Bare(o.Narrow)
	if bare == modelname.Bare(o.Wide) {
		prefix := modelname.Fold(o.Narrow)[:len(o.Narrow)-len(bare)]
		return narrowPath + ": shadows " + widePath + " for the spellings with the provider prefix \"" + prefix +
			"\"; every other spelling of \"" + bare + "\" resolves to \"" + o.Wide + "\""
	}
	return narrowPath + ": shadows " + widePath + " for \"" + bare + "\" and every spelling that extends it at a" +
		" '-', '@' or ':' (a snapshot such as \"" + bare + "-2025-01-01\"), which would otherwise resolve to \"" + o.Wide + "\""
}
