package gwstore

// MigrationNames lists the names of the gateway's migrations, in the order of the list.
func MigrationNames() []string {
	names := make([]string, len(migrations))
	for i, m := range migrations {
		names[i] = m.name
	}
	return names
}
