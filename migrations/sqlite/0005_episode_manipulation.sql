-- The manipulation an episode shows: the strategy drawn or asked for (null at L0) and the
-- seed, so that every page of the episode renders the same manipulated text.
alter table episode add column strategy text;
alter table episode add column seed integer not null default 0;
