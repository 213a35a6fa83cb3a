//! Word pools for the generator: fictional names, places and phrasings.
//!
//! Every name here is invented or generic; combinations are checked for uniqueness by
//! `Gen::unique`, so no two entities of one world share a name.

pub const FIRST_NAMES: &[&str] = &[
    "Ada", "Bram", "Celia", "Dorian", "Elsa", "Fintan", "Greta", "Hollis", "Ines", "Jory", "Kesia", "Lorcan", "Maren",
    "Nico", "Odette", "Piers", "Quilla", "Rafe", "Sabine", "Tobin", "Una", "Viggo", "Wren", "Xavi", "Yara", "Zeno",
    "Aurel", "Bettina", "Cosmo", "Delphine", "Emrys", "Fleur", "Gideon", "Halle", "Ivo", "Juno", "Kasimir", "Lotte",
    "Mateo", "Nell",
];

pub const LAST_NAMES: &[&str] = &[
    "Abernethy",
    "Byrne",
    "Castellan",
    "Dunmore",
    "Ekwall",
    "Farrow",
    "Galloway",
    "Hartigan",
    "Ilves",
    "Jessop",
    "Kilbride",
    "Lindqvist",
    "Marchetti",
    "Nyberg",
    "Oyelaran",
    "Pellow",
    "Quarrie",
    "Rosling",
    "Strand",
    "Treharne",
    "Ulvaeus",
    "Varga",
    "Wexley",
    "Yelland",
    "Zorrilla",
    "Achterberg",
    "Brightwell",
    "Corvino",
    "Daintree",
    "Espinal",
    "Fairbairn",
    "Glasspool",
];

pub const STATES: &[&str] = &[
    "Ohio", "Oregon", "Texas", "Florida", "Nevada", "Vermont", "Georgia", "Arizona", "Maine", "Utah", "Kansas", "Iowa",
    "Idaho", "Delaware",
];

pub const CITIES: &[&str] = &[
    "Fairhaven",
    "Millbrook",
    "Ashford",
    "Riverton",
    "Kingsbury",
    "Lakemont",
    "Harlow",
    "Eastvale",
    "Stonebridge",
    "Westfield",
    "Brookline",
    "Oakridge",
];

pub const SYLLABLES_A: &[&str] = &[
    "Vel", "Ost", "Kar", "Lun", "Bre", "Tam", "Sor", "Quen", "Hal", "Dra", "Mir", "Ael", "Fen", "Gor", "Ist", "Jal",
    "Nor", "Pel", "Rav", "Ulm",
];

pub const SYLLABLES_B: &[&str] = &[
    "mora", "dal", "ven", "rik", "holt", "sund", "avia", "ceni", "brook", "mere", "lund", "stad", "orra", "vik",
    "emar", "ino",
];

pub const HANDLE_WORDS: &[&str] = &[
    "river", "quill", "maple", "cobalt", "ember", "harbor", "pixel", "thistle", "lantern", "meadow", "falcon",
    "copper", "orbit", "willow", "granite", "saffron", "tundra", "juniper", "velvet", "cinder",
];

pub const SYLLABLES_C: &[&str] = &["", "en", "ia", "holm", "ford", "gard", "wick", "by", "ton", "ska"];
