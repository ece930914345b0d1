-- A recording stored as its `.wav` while its gzip is pending (src/media/recording-compressor.ts): the format it is
-- wanted in, cleared when the row moves to the gzip. A node resumes the ones left at start (a shutdown abandoned
-- them, or the process died); a recording wanted as `wav` has null and is never compressed.
alter table conversation_recordings add column compress_to text check (compress_to in ('wav.gz'));
