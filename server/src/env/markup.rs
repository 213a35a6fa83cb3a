//! Parses the line markup of `PageSpec::text` into blocks both renderers share.

/// A piece of page content.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Heading(String),
    Para(String),
    Table { header: Vec<String>, rows: Vec<Vec<String>> },
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// Splits page text into headings, paragraphs and tables.
pub fn parse(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut table: Vec<Vec<String>> = Vec::new();
    let flush_para = |para: &mut Vec<&str>, blocks: &mut Vec<Block>| {
        if !para.is_empty() {
            blocks.push(Block::Para(para.join(" ")));
            para.clear();
        }
    };
    let flush_table = |table: &mut Vec<Vec<String>>, blocks: &mut Vec<Block>| {
        if !table.is_empty() {
            let header = table.remove(0);
            blocks.push(Block::Table { header, rows: std::mem::take(table) });
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('|') {
            flush_para(&mut para, &mut blocks);
            table.push(cells(trimmed));
            continue;
        }
        flush_table(&mut table, &mut blocks);
        if let Some(h) = trimmed.strip_prefix("## ") {
            flush_para(&mut para, &mut blocks);
            blocks.push(Block::Heading(h.to_string()));
        } else if trimmed.is_empty() {
            flush_para(&mut para, &mut blocks);
        } else {
            para.push(trimmed);
        }
    }
    flush_para(&mut para, &mut blocks);
    flush_table(&mut table, &mut blocks);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_tables_and_paragraphs_are_separated() {
        let blocks = parse("| A | B |\n| 1 | 2 |\n## Notes\nfirst line\nsecond line\n\nnext");
        assert_eq!(
            blocks,
            vec![
                Block::Table { header: vec!["A".into(), "B".into()], rows: vec![vec!["1".into(), "2".into()]] },
                Block::Heading("Notes".into()),
                Block::Para("first line second line".into()),
                Block::Para("next".into()),
            ]
        );
    }
}
