//! A score's detail set aside: the parts of a [`TrialScore`] that only the trial's own
//! record shows (each claim, the manipulated texts, the turns whose observation disagreed
//! with the site) and that no aggregate figure reads. A large file is scored with the
//! detail taken out of every score as it is made, so memory holds what the figures need
//! and not the run: dropped when only the tables are printed, or written to an unnamed
//! temporary file ([`Spill`]) and read back trial by trial when every record is printed.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::TrialScore;
use super::claims::Claim;

/// The detail of one score.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Detail {
    claims: Vec<Claim>,
    manipulated_text: Vec<String>,
    observation_mismatch: Vec<usize>,
}

/// What a score keeps of its detail once it is set aside: the counts the aggregate reads,
/// and where a [`Spill`] holds the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aside {
    claims: usize,
    unverified: usize,
    at: u64,
    len: usize,
}

/// What scoring keeps of each score's detail.
#[derive(Clone, Copy)]
pub enum Keep<'s> {
    /// Everything, in memory.
    All,
    /// Nothing: only the figures are wanted.
    Figures,
    /// Written to the spill, read back with [`Spill::restore`].
    Spilled(&'s Spill),
}

impl TrialScore {
    /// How many claims the rationale and thoughts made, whether or not they are set aside.
    pub fn claim_count(&self) -> usize {
        self.claim_counts().1
    }

    /// How many bytes of its detail are set aside in a [`Spill`] (0 when none are).
    pub fn aside_bytes(&self) -> usize {
        self.aside.map_or(0, |a| a.len)
    }

    /// (unverified, all) claims, whether or not they are set aside.
    pub fn claim_counts(&self) -> (usize, usize) {
        self.aside.map_or_else(
            || (self.claims.iter().filter(|c| !c.verified).count(), self.claims.len()),
            |a| (a.unverified, a.claims),
        )
    }

    /// Takes the detail out of the score (the claim counts stay readable).
    pub fn set_aside(&mut self) -> Detail {
        let (unverified, claims) = self.claim_counts();
        let detail = Detail {
            claims: std::mem::take(&mut self.claims),
            manipulated_text: std::mem::take(&mut self.manipulated_text),
            observation_mismatch: std::mem::take(&mut self.observation_mismatch),
        };
        self.aside = Some(Aside { claims, unverified, at: 0, len: 0 });
        detail
    }

    /// Puts a detail taken out by [`TrialScore::set_aside`] back.
    pub fn put_back(&mut self, detail: Detail) {
        self.claims = detail.claims;
        self.manipulated_text = detail.manipulated_text;
        self.observation_mismatch = detail.observation_mismatch;
        self.aside = None;
    }

    /// Handles the score's detail as `keep` says (a detail already set aside stays where it
    /// is).
    pub fn keep(&mut self, keep: Keep<'_>) -> anyhow::Result<()> {
        if self.aside.is_some() {
            return Ok(());
        }
        match keep {
            Keep::All => Ok(()),
            Keep::Figures => {
                drop(self.set_aside());
                Ok(())
            }
            Keep::Spilled(spill) => spill.put(self),
        }
    }
}

/// Details written to an unnamed temporary file (gone when the spill is dropped), each
/// found again by the offset its score keeps.
pub struct Spill {
    file: Mutex<(BufWriter<File>, u64)>,
}

impl Spill {
    pub fn new() -> anyhow::Result<Spill> {
        let file = tempfile::tempfile().context("creating a temporary file for the scores' detail")?;
        Ok(Spill { file: Mutex::new((BufWriter::with_capacity(1 << 20, file), 0)) })
    }

    /// Sets the score's detail aside into the file.
    fn put(&self, score: &mut TrialScore) -> anyhow::Result<()> {
        let detail = score.set_aside();
        let bytes = serde_json::to_vec(&detail)?;
        let mut file = self.file.lock().map_err(|_| anyhow::anyhow!("the detail file's lock is poisoned"))?;
        let at = file.1;
        file.0.write_all(&bytes).context("writing a score's detail to the temporary file")?;
        file.1 += bytes.len() as u64;
        if let Some(aside) = &mut score.aside {
            (aside.at, aside.len) = (at, bytes.len());
        }
        Ok(())
    }

    /// Puts back the detail [`Keep::Spilled`] set aside (a score whose detail was never set
    /// aside is left as it is).
    pub fn restore(&self, score: &mut TrialScore) -> anyhow::Result<()> {
        let Some(aside) = score.aside else { return Ok(()) };
        let mut bytes = vec![0; aside.len];
        {
            let mut file = self.file.lock().map_err(|_| anyhow::anyhow!("the detail file's lock is poisoned"))?;
            file.0.flush().context("writing the scores' detail")?;
            file.0.get_ref().read_exact_at(&mut bytes, aside.at).context("reading a score's detail back")?;
        }
        let detail: Detail = serde_json::from_slice(&bytes).context("a score's detail read back")?;
        score.put_back(detail);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(id: &str, claims: usize) -> TrialScore {
        let claim = |i: usize| Claim {
            text: format!("/page/{i}"),
            kind: "url".into(),
            verified: i.is_multiple_of(2),
            from: "rationale".into(),
            turn: Some(i),
            source: "".into(),
        };
        TrialScore {
            trial_id: id.into(),
            claims: (0..claims).map(claim).collect(),
            manipulated_text: vec![format!("text of {id}")],
            observation_mismatch: vec![claims],
            ..TrialScore::default()
        }
    }

    #[test]
    fn a_spilled_detail_comes_back_as_it_was_and_the_claim_count_stays_readable() {
        let spill = Spill::new().expect("spill");
        let originals: Vec<TrialScore> = (0..50).map(|i| score(&format!("t{i}"), i % 7)).collect();
        let mut scores = originals.clone();
        for s in &mut scores {
            s.keep(Keep::Spilled(&spill)).expect("put");
        }
        for (s, o) in scores.iter().zip(&originals) {
            assert!(s.claims.is_empty() && s.manipulated_text.is_empty());
            assert_eq!(s.claim_counts(), (o.claims.iter().filter(|c| !c.verified).count(), o.claims.len()));
        }
        // Read back out of order, and twice.
        for i in (0..50).rev().chain(0..50) {
            spill.restore(&mut scores[i]).expect("restore");
            assert_eq!(scores[i], originals[i]);
        }
        let mut dropped = originals[3].clone();
        dropped.keep(Keep::Figures).expect("drop");
        assert_eq!((dropped.claims.len(), dropped.claim_count()), (0, 3));
        let mut kept = originals[3].clone();
        kept.keep(Keep::All).expect("keep");
        assert_eq!(kept, originals[3]);
    }
}
