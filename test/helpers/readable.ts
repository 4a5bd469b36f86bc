/** How the secret-masking tests read an output: as someone who wants the key out of it would. */

/**
 * The text with everything the redactor may ignore removed, as an attacker reading it would: escapes (JSON,
 * C, ANSI) decoded away, invisible characters and white space dropped, case folded.
 */
export function readable(text: string): string {
  return (
    text
      .normalize("NFKC")
      // JSON / C escape text, then real escape sequences and their leftovers.
      .replace(/\\+(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrtbfv]|0[0-7]{0,2})/g, "")
      // eslint-disable-next-line no-control-regex
      .replace(/\u001b?\[[0-9;]*[A-Za-z]/g, "")
      .replace(/[\p{Cc}\p{Cf}\p{Z}\s]/gu, "")
      .toLowerCase()
  );
}
