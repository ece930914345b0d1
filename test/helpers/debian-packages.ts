// Where the Debian packages the tests use put their files (docs/peers.md). Each is named here once; an
// environment variable points a test run at another layout.

/** asterisk-core-sounds-en-wav: 568 prompts of one speaker, 8 kHz mono 16-bit WAV. */
export const SOUNDS_DIR = process.env.PARLEY_TEST_SOUNDS_DIR ?? '/usr/share/asterisk/sounds/en_US_f_Allison';

/** sip-tester: SIPp's packet captures (g711a.pcap, dtmf_2833_<digit>.pcap). */
export const SIPP_CAPTURES_DIR = process.env.PARLEY_TEST_SIPP_CAPTURES_DIR ?? '/usr/share/sip-tester';

/** The path of a prompt of SOUNDS_DIR by its name without `.wav` (e.g. `hello-world`, `digits/5`). */
export function soundFile(name: string): string {
  return `${SOUNDS_DIR}/${name}.wav`;
}

/** baresip-core: baresip's modules (its configuration must name the folder). */
export const BARESIP_MODULES_DIR = process.env.PARLEY_TEST_BARESIP_MODULES_DIR ?? '/usr/lib/baresip/modules';
