"""What a memory file is and how two versions of one merge: frontmatter, types, sections, names."""
